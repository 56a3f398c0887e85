"""Dead-lettering cannot fail on the row it is about: an episode Python cannot read whole
(a timestamp past year 9999, stored before the API refused one) still gets its letter
and is marked failed, so it stops holding up the queue; no NUL reaches PostgreSQL."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, text

from memory.db import session_scope
from memory.ops.dead_letters import record_dead_letter
from memory.ops.models import DeadLetter

pytestmark = pytest.mark.integration


def test_an_unreadable_episode_is_dead_lettered_and_marked_failed(
    database_url: str, tenant_id: str
) -> None:
    episode_id = uuid.uuid4()
    with session_scope() as session:
        session.execute(
            text(
                "INSERT INTO episodes (id, tenant_id, user_id, agent_id, session_id, role,"
                " content, occurred_at, metadata, options, source, status, attempts,"
                " created_at, updated_at) VALUES (:id, :t, 'u', 'main', 's', 'user', 'x',"
                " '9999-12-31T23:59:59-14:00', '{}', '{}', 'capture', 'queued', 0, now(),"
                " now())"
            ),
            {"id": episode_id, "t": tenant_id},
        )
    try:
        with session_scope() as session:
            letter = record_dead_letter(
                session=session,
                task_name="tasks.pipeline.process_episodes",
                args=[[str(episode_id)]],
                kwargs={},
                error="DataError: timestamp too large\x00",
                traceback="Traceback\x00 ...",
                attempts=3,
                episode_id=episode_id,
            )
            letter_id = letter.id
        with session_scope() as session:
            status = session.execute(
                text("SELECT status, error FROM episodes WHERE id = :id"), {"id": episode_id}
            ).one()
            stored = session.execute(
                select(DeadLetter.tenant_id, DeadLetter.error, DeadLetter.traceback).where(
                    DeadLetter.id == letter_id
                )
            ).one()
        assert status.status == "failed" and status.error == "DataError: timestamp too large"
        assert stored.tenant_id == tenant_id
        assert "\x00" not in stored.error + stored.traceback
    finally:
        with session_scope() as session:
            session.execute(
                text("DELETE FROM dead_letters WHERE episode_id = :id"), {"id": episode_id}
            )
            session.execute(text("DELETE FROM episodes WHERE id = :id"), {"id": episode_id})
