"""PATCH /v1/memories/{note_id}: edit a memory's attributes, or revise its content.

Roles: agent (notes it can see; visibility/domain only on notes it authored), operator
and admin (at user level, or as a named agent); viewer tokens get 403. A content change
answers with the new version (its id differs from the one patched).
"""

from __future__ import annotations

import logging
import uuid
from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Content, Identifier, Kind, NoteOut, Strict, Visibility
from memory.api.serialize import note_out
from memory.clients.embedder import get_embedder
from memory.commons.events import publish_events
from memory.config import get_settings
from memory.db import session_scope
from memory.errors import AccessDeniedError
from memory.notes.admin import NotePatch, patch_note
from memory.notes.models import Note
from memory.types import utcnow

router = APIRouter(tags=["memories"])
log = logging.getLogger(__name__)
EDITOR_ROLES = ("agent", "operator", "admin")


class MemoryPatch(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    visibility: Visibility | None = None
    pinned: bool | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        None, max_length=32
    )
    domain: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    kind: Kind | None = None
    content: Content | None = None


def _event(note: Note, changes: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "note.updated",
        "tenant_id": note.tenant_id,
        "user_id": note.user_id,
        "note_id": str(note.id),
        "agent_id": note.agent_id,
        "visibility": note.visibility,
        "domain": note.domain,
        "kind": note.kind,
        "changed": sorted(changes),
        "at": utcnow().isoformat(),
    }


@router.patch("/v1/memories/{note_id}", response_model=NoteOut)
def patch_memory(note_id: uuid.UUID, body: MemoryPatch, principal: PrincipalDep) -> NoteOut:
    """Change visibility, pinned, tags, domain or kind in place; a new `content` closes
    this version and returns the next one (same lineage, history kept). Audited."""
    if principal.role not in EDITOR_ROLES:
        raise AccessDeniedError(
            f"role '{principal.role}' may not edit memories", role=principal.role
        )
    settings = get_settings()
    patch = NotePatch(**body.model_dump(exclude={"user_id", "agent_id"}))
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=body.agent_id
        )
        note, changes = patch_note(
            session=session,
            viewer=viewer,
            note_id=note_id,
            patch=patch,
            actor=principal.actor,
            settings=settings,
            embedder=get_embedder(settings),
        )
        result = note_out(session, viewer, note)
        event = _event(note, changes) if changes else None
    if event is not None:
        publish_events([event])
        if "content" in changes:
            _enqueue_link(note.id)
    return result


def _enqueue_link(note_id: uuid.UUID) -> None:
    """Link the new version to similar notes (best effort: it is stored either way)."""
    from tasks.pipeline import link

    try:
        link.apply_async(([str(note_id)],), retry=False)
    except Exception as exc:  # kombu raises several unrelated types for a dead broker
        log.warning("could not enqueue linking of %s: %s", note_id, exc)
