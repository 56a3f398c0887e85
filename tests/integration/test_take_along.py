"""process_episodes takes backlog episodes along only when its own message waited.

A capture's task that was delivered quickly has nothing to take along (episodes queued
before it were published before it and are already held or done), so it must not spend a
transaction looking; one that waited `pipeline.backlog_seconds` or more, or an older
message that does not say when it was queued, takes the oldest queued episodes along.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.types import utcnow
from tasks.pipeline import PRIORITY_EXTRACT, process_episodes
from tests.support.helpers import wait_for_episodes, wait_until

pytestmark = pytest.mark.integration

# Older than anything another test leaves queued, so the take-along (oldest first) finds
# this one first.
LONG_AGO = timedelta(days=3650)


def _capture(tenant_id: str, user_id: str, *, waiting: timedelta | None = None) -> uuid.UUID:
    episode = EpisodeInput(
        user_id=user_id,
        agent_id="main",
        session_id="s1",
        role="user",
        speaker="Alice",
        content=f"I moved to Lisbon in May ({uuid.uuid4().hex[:6]}).",
    )
    with session_scope() as session:
        [(episode_id, _)] = capture_episodes(
            session=session, tenant_id=tenant_id, episodes=[episode]
        )
        if waiting is not None:
            session.execute(
                update(Episode)
                .where(Episode.id == episode_id)
                .values(updated_at=utcnow() - waiting)
            )
    return episode_id


def _status(episode_id: uuid.UUID) -> str:
    with session_scope() as session:
        return session.scalar(select(Episode.status).where(Episode.id == episode_id)) or ""


def _run(episode_id: uuid.UUID, **kwargs: float) -> None:
    """Through the broker and the session's real worker, as the API publishes it."""
    process_episodes.apply_async(([str(episode_id)],), kwargs, priority=PRIORITY_EXTRACT)
    wait_for_episodes([episode_id], timeout=60)


def test_backlog_is_taken_along_only_by_a_task_that_waited(
    celery_worker: str, tenant_id: str, user_id: str
) -> None:
    backlog = _capture(tenant_id, user_id, waiting=LONG_AGO)
    own = _capture(tenant_id, user_id)
    # Queued "now" as far as the worker can tell, however long it takes to pick it up.
    _run(own, queued_at=time.time() + 600)
    # A look would come right after the task's own episode: give it time to happen.
    time.sleep(2)
    assert _status(backlog) == "queued"  # no look for a backlog
    waited = _capture(tenant_id, user_id)
    _run(waited, queued_at=time.time() - get_settings().pipeline.backlog_seconds - 1)
    wait_until(lambda: _status(backlog) != "queued", timeout=30)  # taken along


def test_a_message_without_its_queue_time_takes_the_backlog_along(
    celery_worker: str, tenant_id: str, user_id: str
) -> None:
    backlog = _capture(tenant_id, user_id, waiting=LONG_AGO)
    own = _capture(tenant_id, user_id)
    _run(own)  # as published before queued_at existed
    wait_until(lambda: _status(backlog) != "queued", timeout=30)
