"""process_episodes takes backlog episodes along only when its own message waited.

A capture's task that was delivered quickly has nothing to take along (episodes queued
before it were published before it and are already held or done), so it must not spend a
transaction looking; one that waited BACKLOG_SECONDS or more, or an older message that
does not say when it was queued, takes the oldest queued episodes along.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.types import utcnow
from tasks.pipeline import BACKLOG_SECONDS, process_episodes

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


def test_backlog_is_taken_along_only_by_a_task_that_waited(
    database_url: str, redis_url: str, tenant_id: str, user_id: str
) -> None:
    backlog = _capture(tenant_id, user_id, waiting=LONG_AGO)
    own = _capture(tenant_id, user_id)
    process_episodes([str(own)], queued_at=time.time())
    assert _status(own) != "queued"
    assert _status(backlog) == "queued"  # delivered at once: no look for a backlog

    waited = _capture(tenant_id, user_id)
    process_episodes([str(waited)], queued_at=time.time() - BACKLOG_SECONDS - 1)
    assert _status(waited) != "queued"
    assert _status(backlog) != "queued"  # taken along


def test_a_message_without_its_queue_time_takes_the_backlog_along(
    database_url: str, redis_url: str, tenant_id: str, user_id: str
) -> None:
    backlog = _capture(tenant_id, user_id, waiting=LONG_AGO)
    own = _capture(tenant_id, user_id)
    process_episodes([str(own)])  # as published before queued_at existed
    assert _status(backlog) != "queued"
