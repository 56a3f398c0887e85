"""Memory candidates: notes that wait for the user's or an admin's review before they
are injected (README "Memory candidates").

Invariants:
- Only a current, active note with `review = 'candidate'` that the viewer may see can be
  approved or rejected; anything else is NotFoundError (invisible) or ConflictError.
- Approving clears the mark and nothing else: the note keeps its origin and trust, so its
  context line still says where it came from. Approving with new text writes a new
  version first (memory.notes.admin), then approves that.
- Rejecting forgets the note: its content is erased everywhere it reached
  (memory.erasure.forget); a tombstone says who rejected it.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.clients.embedder import Embedder
from memory.config import Settings
from memory.erasure.forget import ForgetReport, MemoryRef, forget_located, locate_memory
from memory.errors import ConflictError
from memory.notes.admin import NotePatch, patch_note
from memory.notes.models import Note
from memory.notes.service import get_visible_note
from memory.ops.audit import record_event

MAX_LISTED = 500


def list_candidates(*, session: Session, viewer: Viewer, limit: int = 100) -> list[Note]:
    """The viewer's visible candidates, newest first."""
    return list(
        session.scalars(
            select(Note)
            .where(
                visible_clause(viewer),
                Note.review == "candidate",
                Note.status == "active",
                Note.valid_to.is_(None),
            )
            .order_by(Note.created_at.desc(), Note.id)
            .limit(min(limit, MAX_LISTED))
        )
    )


def _candidate(session: Session, viewer: Viewer, note_id: uuid.UUID) -> Note:
    note = get_visible_note(session=session, viewer=viewer, note_id=note_id)
    session.refresh(note, with_for_update=True)
    if note.review != "candidate" or note.status != "active" or note.valid_to is not None:
        raise ConflictError(
            "this memory is not a candidate waiting for review", note_id=str(note_id)
        )
    return note


def approve_candidate(
    *,
    session: Session,
    viewer: Viewer,
    note_id: uuid.UUID,
    actor: str,
    settings: Settings,
    embedder: Embedder,
    content: str | None = None,
) -> Note:
    """Approve the candidate (with `content`, as edited); return the approved version."""
    note = _candidate(session, viewer, note_id)
    if content is not None and content != note.content:
        note, _ = patch_note(
            session=session,
            viewer=viewer,
            note_id=note.id,
            patch=NotePatch(content=content),
            actor=actor,
            settings=settings,
            embedder=embedder,
        )
    note.review = None
    session.flush()
    record_event(
        session=session,
        tenant_id=note.tenant_id,
        user_id=note.user_id,
        actor=actor,
        action="note.approved",
        entity_type="note",
        entity_id=str(note.id),
        data={"agent_id": viewer.agent_id, "edited": note.id != note_id},
    )
    return note


def locate_candidate(*, session: Session, viewer: Viewer, note_id: uuid.UUID) -> MemoryRef:
    """The candidate to reject, checked in the caller's transaction (as `locate_memory`)."""
    _candidate(session, viewer, note_id)
    return locate_memory(session=session, viewer=viewer, note_id=note_id)


def reject_located(
    *, session: Session, ref: MemoryRef, actor: str, reason: str | None
) -> ForgetReport:
    """Reject the located candidate: it is forgotten (erased), a tombstone kept."""
    why = f"rejected candidate: {reason}" if reason else "rejected candidate"
    return forget_located(session=session, ref=ref, actor=actor, reason=why)
