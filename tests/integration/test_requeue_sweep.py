"""The re-publish sweep sends again only episodes whose message is lost: never published
(captured while Redis was down), or published long ago while no extraction message
waits. An episode published long ago while messages wait is only behind others."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from memory.db import get_engine
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes, requeue_candidates
from memory.types import utcnow

pytestmark = pytest.mark.integration


def _two_waiting(session: Session, tenant_id: str, user_id: str) -> tuple[object, object]:
    """(never published, published ten minutes ago), both queued."""
    turns = [
        EpisodeInput(user_id=user_id, agent_id="main", session_id="s", role="user",
                     content=f"waiting turn {i}")
        for i in range(2)
    ]  # fmt: skip
    unpublished, published = (
        i for i, _ in capture_episodes(session=session, tenant_id=tenant_id, episodes=turns)
    )
    session.execute(update(Episode).where(Episode.id == unpublished).values(enqueued_at=None))
    session.execute(
        update(Episode)
        .where(Episode.id == published)
        .values(enqueued_at=utcnow() - timedelta(minutes=10))
    )
    return unpublished, published


@pytest.mark.parametrize("messages_waiting", [True, False])
def test_an_episode_behind_waiting_messages_is_not_published_again(
    database_url: str, tenant_id: str, user_id: str, messages_waiting: bool
) -> None:
    # One transaction, rolled back: the sweep's claims must not touch other tests' rows.
    with get_engine().connect() as connection, Session(bind=connection) as session:
        unpublished, published = _two_waiting(session, tenant_id, user_id)
        claimed = requeue_candidates(
            session=session, stuck_after_seconds=60, limit=1_000_000,
            messages_waiting=messages_waiting,
        )  # fmt: skip
        connection.rollback()
    assert unpublished in claimed
    assert (published in claimed) is not messages_waiting
