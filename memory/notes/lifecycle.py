"""Archiving and restoring notes by hand (dashboard, operators): audited, lexicon-consistent.

Invariants: only the current version (valid_to IS NULL) of a note changes state here; a
note's terms are counted in the user's BM25 statistics exactly while it is active and
current, so archiving unindexes them and restoring indexes them again; both operations
are idempotent (a second call changes nothing and records no event); the row is locked
first, so a concurrent decay sweep cannot unindex the same note twice.
"""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from memory.access.policy import Viewer, can_see
from memory.errors import ConflictError, NotFoundError
from memory.notes.lexicon import index_note_terms, unindex_note_terms
from memory.notes.models import Note
from memory.ops.audit import record_event
from memory.types import utcnow


def _locked_visible(session: Session, viewer: Viewer, note_id: uuid.UUID) -> Note:
    note = session.get(Note, note_id, with_for_update=True)
    if note is None or note.status == "pending" or not can_see(viewer, note):
        raise NotFoundError("no such memory", note_id=str(note_id))
    return note


def _require_current(note: Note, action: str) -> None:
    if note.valid_to is not None:
        raise ConflictError(
            f"only the current version can be {action}; this one was superseded",
            note_id=str(note.id),
            superseded_by=str(note.superseded_by) if note.superseded_by else None,
        )


def archive_note(
    *, session: Session, viewer: Viewer, note_id: uuid.UUID, actor: str, reason: str | None = None
) -> tuple[Note, bool]:
    """Archive an active current note: (note, changed). Archived notes stay stored and
    readable by id, but the read path no longer returns them."""
    note = _locked_visible(session, viewer, note_id)
    if note.status == "archived":
        return note, False
    if note.status != "active":
        raise ConflictError(f"a {note.status} memory cannot be archived", note_id=str(note.id))
    _require_current(note, "archived")
    unindex_note_terms(session=session, notes=[note])
    note.status = "archived"
    note.archived_at = utcnow()
    _audit(session, note, actor, "note.archived", reason)
    session.flush()
    return note, True


def restore_note(
    *, session: Session, viewer: Viewer, note_id: uuid.UUID, actor: str, reason: str | None = None
) -> tuple[Note, bool]:
    """Make an archived current note active again: (note, changed)."""
    note = _locked_visible(session, viewer, note_id)
    if note.status == "active":
        return note, False
    if note.status != "archived":
        raise ConflictError(f"a {note.status} memory cannot be restored", note_id=str(note.id))
    _require_current(note, "restored")
    note.status = "active"
    note.archived_at = None
    index_note_terms(session=session, notes=[note])
    _audit(session, note, actor, "note.restored", reason)
    session.flush()
    return note, True


def _audit(session: Session, note: Note, actor: str, action: str, reason: str | None) -> None:
    record_event(
        session=session,
        tenant_id=note.tenant_id,
        user_id=note.user_id,
        actor=actor,
        action=action,
        entity_type="note",
        entity_id=str(note.id),
        reason=reason,
        data={"kind": note.kind, "domain": note.domain},
    )
