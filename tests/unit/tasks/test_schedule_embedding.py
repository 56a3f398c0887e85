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


class _DeadBroker:
    name = "tasks.pipeline.decide"

    def apply_async(self, *args: object, **kwargs: object) -> None:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379")


def test_a_broker_error_enqueueing_the_next_stage_is_transient() -> None:
    # After embed_notes, decide or link committed: their work is done, so a failed
    # publish must be retried, not dead-letter (and mark failed) the episodes concerned.
    with pytest.raises(TransientError, match=r"could not enqueue tasks\.pipeline\.decide"):
        pipeline.publish_follow_up(_DeadBroker(), (["note-id"],), priority=3)
