"""The capture side of the journal: what each turn of a session became, and why, read from
episodes, provenance (`note_sources`), notes and the pipeline's audit events.

Invariants:
- No text of a turn or a memory is returned: ids, seq, role, origin, times, decisions,
  outcomes and reasons in words (an LLM's decision reason only with a note the viewer
  may read).
- A note the viewer may not read is left out, and so is every id that would name it (a
  merge target, a revised version); a turn whose every note is hidden is shown without
  its notes and without its origin reference.
- An agent sees the turns it captured, and other agents' turns only where it may read a
  memory they produced; user-level viewers see every turn of the user.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.config import Settings
from memory.episodes.models import Episode
from memory.journal.outcomes import NoteFacts, note_outcome, turn_outcome
from memory.notes.models import Note, NoteSource
from memory.ops.models import AuditEvent

DECISION_ACTIONS = ("note.created", "note.updated", "note.reinforced", "note.invalidated")
_ERROR_CLASS = re.compile(r"^[A-Za-z_][\w.]*$")


def list_turns(
    *, session: Session, viewer: Viewer, settings: Settings, session_id: str | None, limit: int
) -> list[dict[str, Any]]:
    """The viewer's newest `limit` turns (of `session_id`, or of every session), newest
    first, each with what became of it."""
    episodes = _episodes(session, viewer, session_id, limit)
    if not episodes:
        return []
    sources = _sources(session, viewer, [e.id for e in episodes])
    since = min(e.created_at for e in episodes)
    events = EventIndex(_events(session, viewer, sources, since))
    rows = [r for found in sources.values() for r in found]
    named = {str(r.note_id) for r in rows} | {str(r.superseded_by) for r in rows if r.superseded_by}
    readable = _visible(session, viewer, events.targets() | named)
    turns = []
    for episode in episodes:
        facts = [
            NoteFacts.of(row, events.for_source(episode.id, row), readable)
            for row in sources.get(episode.id, [])
        ]
        turns.append(_turn(episode, facts, settings))
    return turns


def _episodes(
    session: Session, viewer: Viewer, session_id: str | None, limit: int
) -> Sequence[Any]:
    """The turns' columns, never their content."""
    conditions: list[ColumnElement[bool]] = [
        Episode.tenant_id == viewer.tenant_id,
        Episode.user_id == viewer.user_id,
    ]
    if session_id is not None:
        conditions.append(Episode.session_id == session_id)
    if not viewer.user_level:
        produced_visible = (
            select(NoteSource.note_id)
            .join(Note, Note.id == NoteSource.note_id)
            .where(NoteSource.episode_id == Episode.id, visible_clause(viewer))
            .exists()
        )
        conditions.append(or_(Episode.agent_id == viewer.agent_id, produced_visible))
    columns = (
        Episode.id,
        Episode.seq,
        Episode.agent_id,
        Episode.session_id,
        Episode.role,
        Episode.origin,
        Episode.origin_ref,
        Episode.source,
        Episode.status,
        Episode.decision,
        Episode.error,
        Episode.occurred_at,
        Episode.created_at,
        Episode.processed_at,
    )
    query = select(*columns).where(*conditions).order_by(Episode.seq.desc()).limit(limit)
    return session.execute(query).all()


def _sources(
    session: Session, viewer: Viewer, episode_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[Any]]:
    """Each turn's provenance rows with the note's state and whether the viewer reads it."""
    query = (
        select(
            NoteSource.episode_id,
            NoteSource.note_id,
            NoteSource.relation,
            NoteSource.created_at,
            Note.status,
            Note.review,
            Note.trust,
            Note.origin,
            Note.kind,
            Note.agent_id,
            Note.valid_to,
            Note.superseded_by,
            visible_clause(viewer).label("visible"),
        )
        .join(Note, Note.id == NoteSource.note_id)
        .where(NoteSource.episode_id.in_(episode_ids))
        .order_by(NoteSource.created_at, NoteSource.note_id)
    )
    found: dict[uuid.UUID, list[Any]] = defaultdict(list)
    for row in session.execute(query):
        found[row.episode_id].append(row)
    return found


def _events(
    session: Session, viewer: Viewer, sources: dict[uuid.UUID, list[Any]], since: datetime
) -> Sequence[AuditEvent]:
    """The pipeline's decision events about these notes (or naming these turns), from the
    oldest turn's capture on."""
    note_ids = sorted({str(row.note_id) for rows in sources.values() for row in rows})
    about = AuditEvent.entity_id.in_(note_ids) if note_ids else None
    named = AuditEvent.action == "note.invalidated"  # about a note the turn closed
    query = select(AuditEvent).where(
        AuditEvent.tenant_id == viewer.tenant_id,
        AuditEvent.user_id == viewer.user_id,
        AuditEvent.entity_type == "note",
        AuditEvent.action.in_(DECISION_ACTIONS),
        AuditEvent.created_at >= since,
        or_(about, named) if about is not None else named,
    )
    return session.scalars(query.order_by(AuditEvent.id)).all()


def _visible(session: Session, viewer: Viewer, note_ids: set[str]) -> set[str]:
    ids = [uuid.UUID(i) for i in note_ids if _is_uuid(i)]
    if not ids:
        return set()
    query = select(Note.id).where(Note.id.in_(ids), visible_clause(viewer))
    return {str(i) for i in session.scalars(query)}


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class EventIndex:
    """The decision events, by the note they are about and by the turns they name."""

    def __init__(self, events: Sequence[AuditEvent]) -> None:
        self.by_entity: dict[str, list[AuditEvent]] = defaultdict(list)
        self.by_episode: dict[str, list[AuditEvent]] = defaultdict(list)
        for event in events:
            self.by_entity[event.entity_id or ""].append(event)
            for episode_id in (event.data or {}).get("episodes") or []:
                self.by_episode[str(episode_id)].append(event)

    def targets(self) -> set[str]:
        """Every note an event names (its subject or its target)."""
        found = set(self.by_entity)
        for events in self.by_entity.values():
            found |= {str(e.data["target"]) for e in events if (e.data or {}).get("target")}
        return found - {""}

    def for_source(self, episode_id: uuid.UUID, row: Any) -> AuditEvent | None:
        """The event that decided what this provenance row records."""
        note_id, named = str(row.note_id), self.by_episode.get(str(episode_id), [])
        if row.relation == "reinforced":
            return _match(named, self.by_entity.get(note_id, []), "note.reinforced", row)
        if row.relation != "extracted":
            return None
        if row.status == "deleted":
            closed = [e for e in named if e.action == "note.invalidated"]
            return closed[0] if closed else None
        own = [e for e in self.by_entity.get(note_id, []) if e.action != "note.reinforced"]
        return own[0] if own else None


def _match(
    named: list[AuditEvent], about: list[AuditEvent], action: str, row: Any
) -> AuditEvent | None:
    """The event naming the turn; else (events written before they named turns) the one
    about the note closest in time to the provenance row."""
    exact = [e for e in named if e.action == action and e.entity_id == str(row.note_id)]
    if exact:
        return exact[0]
    loose = [e for e in about if e.action == action and not (e.data or {}).get("episodes")]
    if not loose:
        return None
    return min(loose, key=lambda e: abs((e.created_at - row.created_at).total_seconds()))


def _turn(episode: Any, facts: list[NoteFacts], settings: Settings) -> dict[str, Any]:
    shown = [f for f in facts if f.visible]
    hidden = bool(facts) and not shown
    notes = [note_outcome(f, settings) for f in shown]
    outcome, why = turn_outcome(episode, notes, hidden=hidden, settings=settings)
    return {
        "episode_id": str(episode.id),
        "seq": episode.seq,
        "session_id": episode.session_id,
        "agent_id": episode.agent_id,
        "role": episode.role,
        "origin": episode.origin,
        "origin_ref": None if hidden else episode.origin_ref,
        "source": episode.source,
        "status": episode.status,
        "decision": episode.decision,
        "error": _error_class(episode.error),
        "occurred_at": episode.occurred_at.isoformat(),
        "captured_at": episode.created_at.isoformat(),
        "processed_at": episode.processed_at.isoformat() if episode.processed_at else None,
        "outcome": outcome,
        "why": why,
        "hidden": hidden,
        "notes": notes,
    }


def _error_class(error: str | None) -> str | None:
    """The error's class name only (its message may quote the turn)."""
    if not error:
        return None
    name = error.split(":", 1)[0].strip()
    return name if _ERROR_CLASS.match(name) else "error"
