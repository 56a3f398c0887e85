"""Memory candidates: list, approve (optionally edited) and reject the memories that wait
for review (memory.trust.review). Roles: agent, operator and admin, within their
binding; viewer tokens may list but not decide."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Content, ForgetOut, Identifier, NoteOut, Strict
from memory.api.serialize import note_out
from memory.clients.embedder import get_embedder
from memory.clients.redis import get_redis
from memory.config import get_settings
from memory.db import session_scope
from memory.erasure.outside import purge_outside
from memory.errors import AccessDeniedError
from memory.trust.review import (
    MAX_LISTED,
    approve_candidate,
    list_candidates,
    locate_candidate,
    reject_located,
)

router = APIRouter(tags=["memories"])
REVIEWER_ROLES = ("agent", "operator", "admin")


class ReviewIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None


class ApproveIn(ReviewIn):
    # The candidate's text as the reviewer corrected it; omitted approves it as it is.
    content: Content | None = None


class RejectIn(ReviewIn):
    reason: Annotated[str, Field(min_length=1, max_length=500)] | None = None


def _require_reviewer(principal: Principal) -> None:
    if principal.role not in REVIEWER_ROLES:
        raise AccessDeniedError(
            f"role '{principal.role}' may not review memories", role=principal.role
        )


@router.get("/v1/candidates", response_model=list[NoteOut])
def get_candidates(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 100,
) -> list[NoteOut]:
    """The memories waiting for review that the caller may see, newest first."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        notes = list_candidates(session=session, viewer=viewer, limit=limit)
        return [note_out(session, viewer, note) for note in notes]


@router.post("/v1/candidates/{note_id}/approve", response_model=NoteOut)
def approve(note_id: uuid.UUID, body: ApproveIn, principal: PrincipalDep) -> NoteOut:
    """Approve a candidate, as it is or with corrected `content` (a new version): from
    now on it may be injected, still labelled with its origin."""
    _require_reviewer(principal)
    settings = get_settings()
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=body.agent_id
        )
        note = approve_candidate(
            session=session,
            viewer=viewer,
            note_id=note_id,
            actor=principal.actor,
            settings=settings,
            embedder=get_embedder(settings),
            content=body.content,
        )
        return note_out(session, viewer, note)


@router.post("/v1/candidates/{note_id}/reject", response_model=ForgetOut)
def reject(note_id: uuid.UUID, body: RejectIn, principal: PrincipalDep) -> ForgetOut:
    """Reject a candidate: it is forgotten, its content erased everywhere it went."""
    _require_reviewer(principal)
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=body.agent_id
        )
        ref = locate_candidate(session=session, viewer=viewer, note_id=note_id)
    with session_scope() as session:
        report = reject_located(session=session, ref=ref, actor=principal.actor, reason=body.reason)
    outside = purge_outside(report, client=get_redis(), settings=get_settings())
    return ForgetOut(id=note_id, **report.summary(), **outside)
