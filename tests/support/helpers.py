"""Helpers for integration and e2e tests: auth headers and waiting for the pipeline to drain."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
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


# --- two users of one tenant, for the token authority tests ----------------------------


@dataclass(frozen=True)
class SeededUser:
    """One user's rows: `marker` is in every text written for it (note contents, episode,
    dead-letter error, token name, working-memory item), so a body holding it leaks them."""

    user_id: str
    marker: str
    note_ids: tuple[str, str]  # in conflict with each other, linked to `episode_id`
    spare_note_id: str  # for calls that change a note's state
    episode_id: str
    dead_letter_id: str
    conflict_id: str
    token_id: str  # a viewer token bound to this user
    token_prefix: str
    session_id: str  # a working-memory session holding one item

    def strings(self) -> list[str]:
        """Everything that names this user's data."""
        return [
            self.user_id,
            self.marker,
            *self.note_ids,
            self.spare_note_id,
            self.episode_id,
            self.dead_letter_id,
            self.conflict_id,
            self.token_id,
            self.token_prefix,
        ]


def seed_user(tenant_id: str, user_id: str, marker: str) -> SeededUser:
    """Notes (two in conflict), a failed episode with its dead letter, a bound viewer
    token and a working-memory item for `user_id`, written as the owner."""
    from memory.access.tokens import create_token
    from memory.clients.redis import get_redis
    from memory.config import get_settings
    from memory.conflicts.models import Conflict
    from memory.episodes.service import EpisodeInput, capture_episodes
    from memory.notes.models import NoteSource
    from memory.ops.dead_letters import record_dead_letter
    from memory.working.service import ItemInput, put_items

    session_id = f"s-{marker.lower()}"
    with session_scope() as session:
        [(episode_id, _)] = capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[EpisodeInput(user_id, "main", session_id, "user", f"{marker} said hi")],
        )
        notes = [new_note(tenant_id, user_id, f"{marker} fact {n}") for n in range(3)]
        session.add_all(notes)
        session.flush()
        session.add_all(NoteSource(note_id=n.id, episode_id=episode_id) for n in notes)
        a, b = sorted((notes[0].id, notes[1].id))
        conflict = Conflict(tenant_id=tenant_id, user_id=user_id, note_a_id=a, note_b_id=b,
                            agent_a_id="main", agent_b_id="main", similarity=0.9,
                            classification="contradictory")  # fmt: skip
        session.add(conflict)
        letter = record_dead_letter(
            session=session, task_name="tasks.maintenance.requeue_stuck_episodes", args=[],
            kwargs={}, error=f"RuntimeError: {marker} boom", traceback=None, attempts=5,
            episode_id=episode_id,
        )  # fmt: skip
        token, _ = create_token(
            session=session, role="viewer", tenant_id=tenant_id, user_id=user_id,
            name=f"{marker}-token",
        )  # fmt: skip
        session.flush()
        ids = (str(a), str(b), str(notes[2].id), str(episode_id), str(letter.id), str(conflict.id))
        token_id, prefix = str(token.id), token.prefix
    put_items(client=get_redis(), tenant_id=tenant_id, user_id=user_id, session_id=session_id,
              agent_id="main", items=[ItemInput(f"{marker} working item")],
              settings=get_settings().working)  # fmt: skip
    return SeededUser(user_id, marker, (ids[0], ids[1]), ids[2], ids[3], ids[4], ids[5],
                      token_id, prefix, session_id)  # fmt: skip
