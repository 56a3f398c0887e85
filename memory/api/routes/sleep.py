"""Memory dynamics over HTTP: conflicts (list, resolve) and on-demand sleep cycles.

Roles: GET /v1/conflicts any role (an agent token names its agent_id and sees only
conflicts whose two notes it may read); POST /v1/conflicts/{id}/resolve operator and
admin; POST /v1/consolidate operator, admin and agent (a user-bound token only for its
own user). Resolution and enqueueing are audited.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep, require_roles
from memory.api.identity import resolve_viewer
from memory.api.schemas import Content, Identifier, Strict
from memory.clients.embedder import get_embedder
from memory.commons.events import publish_events
from memory.config import get_settings
from memory.conflicts.models import Conflict
from memory.conflicts.resolve import list_conflicts, resolve_conflict
from memory.db import scoped_session_for, session_scope
from memory.errors import AccessDeniedError, InvalidInputError
from memory.notes.models import Note
from memory.ops.audit import record_event
from memory.ops.users import require_known_user
from memory.types import utcnow
from tasks.sleep import enqueue_sleep_cycle

router = APIRouter(tags=["sleep"])
Status = Literal["open", "resolved"]
Classification = Literal["compatible", "contradictory", "subsumes", "ambiguous"]


class ConflictNoteOut(BaseModel):
    id: uuid.UUID
    agent_id: str
    content: str
    kind: str
    status: str
    valid_to: Any = None


class ConflictOut(BaseModel):
    id: uuid.UUID
    user_id: str
    classification: str
    status: str
    similarity: float
    cross_agent: bool
    reason: str | None
    a: ConflictNoteOut
    b: ConflictNoteOut
    resolution: dict[str, Any] | None
    created_at: Any
    resolved_at: Any = None


class ResolveIn(Strict):
    user_id: Identifier | None = None
    keep: Literal["a", "b", "both"]
    merged_content: Content | None = None


class ConsolidateIn(Strict):
    user_id: Identifier | None = None


class TaskAccepted(BaseModel):
    task_id: str


def _note_out(note: Note) -> ConflictNoteOut:
    return ConflictNoteOut(
        id=note.id,
        agent_id=note.agent_id,
        content=note.content,
        kind=note.kind,
        status=note.status,
        valid_to=note.valid_to,
    )


def conflict_out(conflict: Conflict, a: Note, b: Note) -> ConflictOut:
    detection = (conflict.resolution or {}).get("detection") or {}
    return ConflictOut(
        id=conflict.id,
        user_id=conflict.user_id,
        classification=conflict.classification,
        status=conflict.status,
        similarity=conflict.similarity,
        cross_agent=conflict.agent_a_id != conflict.agent_b_id,
        reason=detection.get("reason"),
        a=_note_out(a),
        b=_note_out(b),
        resolution=conflict.resolution,
        created_at=conflict.created_at,
        resolved_at=conflict.resolved_at,
    )


@router.get("/v1/conflicts", response_model=list[ConflictOut])
def get_conflicts(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    status: Annotated[Status | None, Query()] = "open",
    classification: Annotated[Classification | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[ConflictOut]:
    """The user's conflicts between notes the caller may see (cross-agent first)."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        rows = list_conflicts(
            session=session,
            viewer=viewer,
            status=status,
            classification=classification,
            limit=limit,
        )
        return [conflict_out(c, a, b) for c, a, b in rows]


@router.post("/v1/conflicts/{conflict_id}/resolve", response_model=ConflictOut)
def post_resolve(
    conflict_id: uuid.UUID,
    body: ResolveIn,
    principal: Principal = Depends(require_roles("operator", "admin")),
) -> ConflictOut:
    """Keep a (b is closed), keep b, keep both, or merge into a new version of the kept note."""
    settings = get_settings()
    embedder = get_embedder(settings) if body.merged_content is not None else None
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=None
        )
        conflict = resolve_conflict(
            session=session,
            viewer=viewer,
            conflict_id=conflict_id,
            keep=body.keep,
            actor=principal.actor,
            now=utcnow(),
            settings=settings,
            embedder=embedder,
            merged_content=body.merged_content,
        )
        a, b = session.get(Note, conflict.note_a_id), session.get(Note, conflict.note_b_id)
        assert a is not None and b is not None
        out = conflict_out(conflict, a, b)
    publish_events(
        [
            {
                "type": "conflict.resolved",
                "tenant_id": principal.tenant_id,
                "user_id": out.user_id,
                "conflict_id": str(out.id),
                "keep": body.keep,
                # Resolution is an operator action: user-level subscribers only.
                "visibility": "user-only",
                "at": utcnow().isoformat(),
            }
        ]
    )
    return out


@router.post("/v1/consolidate", status_code=202, response_model=TaskAccepted)
def post_consolidate(
    body: ConsolidateIn,
    principal: Principal = Depends(require_roles("operator", "admin", "agent")),
) -> TaskAccepted:
    """Enqueue one sleep cycle (decay, consolidation, conflicts) for the user now."""
    user_id = body.user_id or principal.user_id
    if principal.user_id is not None and user_id != principal.user_id:
        raise AccessDeniedError("token is bound to another user", user_id=user_id)
    if not user_id:
        raise InvalidInputError("user_id: field required")
    with scoped_session_for(principal.tenant_id, user_id) as session:
        require_known_user(session=session, tenant_id=principal.tenant_id, user_id=user_id)
    task_id = enqueue_sleep_cycle(principal.tenant_id, user_id)
    with scoped_session_for(principal.tenant_id, user_id) as session:
        record_event(
            session=session,
            tenant_id=principal.tenant_id,
            user_id=user_id,
            actor=principal.actor,
            action="sleep.requested",
            entity_type="user",
            entity_id=user_id[:64],
            data={"task_id": task_id},
        )
    return TaskAccepted(task_id=task_id)
