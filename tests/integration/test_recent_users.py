"""The users read ahead most recently (`memory.retrieval.recent_users`), in the real Redis:
newest first, one entry per user, at most `keep`; one starting process claims the
start-up read-ahead; a Redis that cannot be reached records and returns nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from memory.retrieval.recent_users import STARTUP_LOCK_KEY, RecentUsers

pytestmark = pytest.mark.integration


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url, decode_responses=True)
    yield connection
    connection.close()


def _recent(client: redis.Redis, keep: int = 3) -> RecentUsers:
    clock = iter(range(1, 1000))
    key = f"test:recent:{uuid.uuid4().hex}"
    return RecentUsers(lambda: client, key=key, keep=keep, clock=lambda: float(next(clock)))


def test_newest_first_once_each_and_bounded(client: redis.Redis) -> None:
    recent = _recent(client)
    for user in ("a", "b", "c", "a", "d"):
        recent.remember("t", user)
    # "a" moved to the front when read again; "b", the oldest, fell off beyond keep=3.
    assert recent.most_recent(10) == [("t", "d"), ("t", "a"), ("t", "c")]
    assert recent.most_recent(2) == [("t", "d"), ("t", "a")]


def test_one_process_claims_the_startup(client: redis.Redis) -> None:
    client.delete(STARTUP_LOCK_KEY)
    recent = _recent(client)
    assert recent.claim_startup(60) is True
    assert recent.claim_startup(60) is False  # a second API process starting meanwhile
    assert 0 < client.ttl(STARTUP_LOCK_KEY) <= 60
    client.delete(STARTUP_LOCK_KEY)


def test_an_unreachable_redis_is_only_a_missing_hint() -> None:
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    recent = RecentUsers(lambda: down)
    recent.remember("t", "u")  # no error
    assert recent.most_recent(10) == []
    assert recent.claim_startup(60) is False
