"""A stalled Redis costs a request at most the quick timeout, once: then requests read
the token row for a while without asking Redis (the cache is bypassed, never trusted)."""

from __future__ import annotations

import pytest
import redis

from memory.access import tokens


class _Stalled:
    def __init__(self) -> None:
        self.asked = 0

    def get(self, key: str) -> str:
        self.asked += 1
        raise redis.TimeoutError("Timeout reading from socket")


class _Healthy:
    def get(self, key: str) -> str:
        return "7"


def test_a_failed_answer_quiets_redis_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    stalled = _Stalled()
    clock = [1000.0]
    monkeypatch.setattr(tokens, "_redis_quiet_until", 0.0)
    monkeypatch.setattr(tokens, "get_quick_redis", lambda: stalled)
    monkeypatch.setattr(tokens.time, "monotonic", lambda: clock[0])
    assert [tokens._revocation_epoch() for _ in range(50)] == [None] * 50
    assert stalled.asked == 1  # one slow answer, not fifty
    clock[0] += tokens.REDIS_RETRY_SECONDS + 0.1
    monkeypatch.setattr(tokens, "get_quick_redis", lambda: _Healthy())
    assert tokens._revocation_epoch() == "7"


def test_the_quick_client_gives_up_fast() -> None:
    from memory.clients.redis import QUICK_TIMEOUT_SECONDS, _quick_client_for

    client = _quick_client_for("redis://127.0.0.1:1/0")
    kwargs = client.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == QUICK_TIMEOUT_SECONDS
    assert QUICK_TIMEOUT_SECONDS <= 0.1
