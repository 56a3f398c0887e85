"""Helpers for integration and e2e tests: auth headers and waiting for the pipeline to drain."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import TextClause, func, select, text

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note

# A bare note of tenant 't' for SQL written straight into a schema at some revision (user,
# kind, domain, status and occurred_at as given; `insert_bare_note` takes them).
BARE_NOTE = {
    "u": "u",
    "kind": "stable",
    "domain": "general",
    "status": "active",
    "occurred_at": datetime(2025, 1, 1, tzinfo=UTC),
}
UNIT_VECTOR = "[" + ",".join(["1"] + ["0"] * 383) + "]"


def insert_bare_note(vector_column: str = "embedding") -> TextClause:
    """The INSERT of a `BARE_NOTE` with one vector column set to :v (a vector's text)."""
    return text(
        "INSERT INTO notes (id, lineage_id, version, tenant_id, user_id, agent_id, content,"
        " keywords, tags, kind, domain, visibility, pinned, status, importance, metadata,"
        " occurred_at, created_at, updated_at, valid_from, access_times, access_count,"
        " first_access_at, last_access_at, half_life_hours, term_count, window_term_count,"
        f" {vector_column}) VALUES (:id, :id, 1, 't', :u, 'main', 'x', '{{}}', '{{}}', :kind,"
        " :domain, 'open', false, :status, 0.5, '{}', :occurred_at, now(), now(), now(), '{}',"
        " 0, now(), now(), 168, 0, 0, CAST(:v AS vector))"
    )


def update_note(note_id: uuid.UUID, **values: object) -> None:
    """Set columns of one note through the ORM, in a transaction of its own."""
    with session_scope() as session:
        note = session.get(Note, note_id)
        assert note is not None
        for name, value in values.items():
            setattr(note, name, value)


def mirror_ids_for_app_role(mirror: str, own: Note, other: Note) -> set[uuid.UUID]:
    """Write `other` as the owner and `own` as `muma_app` (scoped to its tenant and user),
    then the note ids `muma_app` reads from the trigger-kept table `mirror` in that
    transaction: a mirror's row-level security shows it its own rows only."""
    from memory.db import scoped_session_for

    with session_scope() as session:
        session.add(other)
    with scoped_session_for(own.tenant_id, own.user_id) as session:
        session.add(own)  # the trigger writes the mirror with the owner's rights
        session.flush()
        return set(session.execute(text(f"SELECT note_id FROM {mirror}")).scalars())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def new_note(tenant_id: str, user_id: str, content: str, **fields: object) -> Note:
    """An active, open note of agent `main` (its own lineage), for rows written directly."""
    note_id = uuid.uuid4()
    defaults: dict[str, object] = {"agent_id": "main", "visibility": "open", "status": "active"}
    return Note(
        id=note_id,
        lineage_id=note_id,
        tenant_id=tenant_id,
        user_id=user_id,
        content=content,
        **{**defaults, **fields},
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 60, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def episodes_settled(episode_ids: list[str | uuid.UUID]) -> bool:
    ids = [uuid.UUID(str(i)) for i in episode_ids]
    with session_scope() as session:
        unsettled = session.scalar(
            select(func.count())
            .select_from(Episode)
            .where(Episode.id.in_(ids), Episode.status.in_(("queued", "processing")))
        )
    return unsettled == 0


def wait_for_episodes(episode_ids: list[str | uuid.UUID], timeout: float = 60) -> None:
    wait_until(lambda: episodes_settled(episode_ids), timeout)


def workers_idle() -> bool:
    """No message waits in any queue and no worker runs, holds or has scheduled a task.

    An episode is `done` after its decision, while its link and evolve stages (which merge
    tags into neighbouring notes) are still queued: a test that compares the store with
    what it saw before waits for this, not for the episode."""
    from memory.ops.health import queue_depths
    from tasks.app import app

    if any(queue_depths().values()):
        return False
    inspect = app.control.inspect(timeout=0.5)
    for held in (inspect.active(), inspect.reserved(), inspect.scheduled()):
        if any((held or {}).values()):
            return False
    return True


def wait_for_workers_idle(timeout: float = 120) -> None:
    wait_until(workers_idle, timeout=timeout, interval=0.2)
