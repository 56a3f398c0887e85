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


def get_redis(settings: Settings | None = None) -> redis.Redis:
    settings = settings or get_settings()
    return _client_for(resolve_redis_url(settings.redis_url, settings.home))
