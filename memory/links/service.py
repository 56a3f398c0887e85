"""Links made by people and agents (the pipeline links through links/pipeline.py).

Invariants: both ends must be notes the viewer may see (NotFoundError otherwise, so
existence is not leaked); a link never crosses users (both notes are the viewer's user);
creating an existing (source, target, kind) edge returns it unchanged (idempotent); only
the kinds in MANUAL_LINK_KINDS may be made by hand (`consolidates` belongs to the sleep
cycle); every new link is audited.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.errors import InvalidInputError, NotFoundError
from memory.links.models import Link
from memory.notes.models import Note
from memory.notes.service import get_visible_note
from memory.ops.audit import record_event

MANUAL_LINK_KINDS = ("related", "derived_from", "supersedes", "contradicts")
MANUAL_LINK_WEIGHT = 1.0


def create_link(
    *,
    session: Session,
    viewer: Viewer,
    source_id: uuid.UUID,
    target_id: uuid.UUID,
    kind: str,
    created_by: str,
    actor: str,
) -> tuple[Link, bool]:
    """The link (new or existing) and whether this call created it."""
    if kind not in MANUAL_LINK_KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(MANUAL_LINK_KINDS)}")
    if source_id == target_id:
        raise InvalidInputError("a note cannot link to itself")
    source = get_visible_note(session=session, viewer=viewer, note_id=source_id)
    get_visible_note(session=session, viewer=viewer, note_id=target_id)
    new_id = _insert_edge(session, source, target_id, kind, created_by)
    link = session.scalar(
        select(Link).where(
            Link.source_id == source_id, Link.target_id == target_id, Link.kind == kind
        )
    )
    if link is None:  # deleted with one of its notes between the two statements
        raise NotFoundError("no such memory", note_id=str(source_id))
    if new_id is not None:
        record_event(
            session=session,
            tenant_id=link.tenant_id,
            user_id=link.user_id,
            actor=actor,
            action="link.created",
            entity_type="link",
            entity_id=str(link.id),
            data={**link_out(link), "agent_id": viewer.agent_id},
        )
        session.flush()
    return link, new_id is not None


def _insert_edge(
    session: Session, source: Note, target_id: uuid.UUID, kind: str, created_by: str
) -> uuid.UUID | None:
    """The new link's id, or None when the edge already existed (left unchanged)."""
    return session.scalar(
        insert(Link)
        .values(
            id=uuid.uuid4(),
            tenant_id=source.tenant_id,
            user_id=source.user_id,
            source_id=source.id,
            target_id=target_id,
            kind=kind,
            weight=MANUAL_LINK_WEIGHT,
            created_by=created_by,
        )
        .on_conflict_do_nothing(constraint="uq_links_edge")
        .returning(Link.id)
    )


def link_out(link: Link) -> dict[str, Any]:
    return {
        "id": str(link.id),
        "source_id": str(link.source_id),
        "target_id": str(link.target_id),
        "kind": link.kind,
        "weight": link.weight,
        "created_by": link.created_by,
        "created_at": link.created_at.isoformat(),
    }
