"""A broker failure after an extraction committed is transient: retried, not dead-lettered."""

from __future__ import annotations

import pytest
import redis

from memory.errors import TransientError
from tasks import pipeline


class _StalledRedis:
    def set(self, *args: object, **kwargs: object) -> bool:
        raise redis.TimeoutError("Timeout reading from socket")


def test_a_redis_timeout_while_scheduling_the_embedding_is_transient(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "get_redis", lambda: _StalledRedis())
    with pytest.raises(TransientError, match="could not schedule the embedding"):
        pipeline.schedule_embedding()
