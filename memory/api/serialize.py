"""ORM rows to response models."""

from __future__ import annotations

from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.api.schemas import NoteOut, SourceOut
from memory.notes.models import Note
from memory.notes.service import note_links, note_sources
from memory.trust.origin import provenance


def note_out(session: Session, viewer: Viewer, note: Note, *, with_links: bool = False) -> NoteOut:
    sources = note_sources(session=session, note_ids=[note.id])[note.id]
    return NoteOut(
        id=note.id,
        lineage_id=note.lineage_id,
        version=note.version,
        user_id=note.user_id,
        agent_id=note.agent_id,
        session_id=note.session_id,
        content=note.content,
        context=note.context,
        keywords=list(note.keywords or []),
        tags=list(note.tags or []),
        kind=note.kind,
        domain=note.domain,
        visibility=note.visibility,
        pinned=note.pinned,
        status=note.status,
        importance=note.importance,
        occurred_at=note.occurred_at,
        created_at=note.created_at,
        valid_from=note.valid_from,
        valid_to=note.valid_to,
        superseded_by=note.superseded_by,
        expires_at=note.expires_at,
        access_count=note.access_count,
        last_access_at=note.last_access_at,
        half_life_hours=note.half_life_hours,
        **provenance(note),
        sources=[SourceOut(**s) for s in sources],
        links=note_links(session=session, viewer=viewer, note_id=note.id) if with_links else [],
    )
