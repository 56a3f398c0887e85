"""The Redis connection pool of this process (per URL), for events, working memory, health."""

from __future__ import annotations

from functools import lru_cache

import redis

from memory.config import Settings, get_settings
from memory.runtime.embedded import resolve_redis_url


@lru_cache(maxsize=4)
def _client_for(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        socket_timeout=2,
        socket_connect_timeout=1,
        health_check_interval=30,
        decode_responses=True,
    )


def get_redis_at(url: str) -> redis.Redis:
    """This process's client of the Redis at `url` (a broker other than MUMA_REDIS_URL)."""
    return _client_for(url)


def get_redis(settings: Settings | None = None) -> redis.Redis:
    settings = settings or get_settings()
    return _client_for(resolve_redis_url(settings.redis_url, settings.home))


# A request's own questions to Redis (is a token revoked?) wait at most this long: a
# stalled Redis made every request wait the pool's 2 s socket timeout.
QUICK_TIMEOUT_SECONDS = 0.1


@lru_cache(maxsize=4)
def _quick_client_for(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        socket_timeout=QUICK_TIMEOUT_SECONDS,
        socket_connect_timeout=QUICK_TIMEOUT_SECONDS,
        decode_responses=True,
    )


def get_quick_redis(settings: Settings | None = None) -> redis.Redis:
    """A client for questions on a request's path: short timeouts, so a stalled Redis
    costs a request at most QUICK_TIMEOUT_SECONDS (callers fall back without it)."""
    settings = settings or get_settings()
    return _quick_client_for(resolve_redis_url(settings.redis_url, settings.home))
