"""L1 working memory per session: put, list and promote into long-term memory.

Roles: PUT and promote write memories (agent and admin tokens, `require_writer`); GET is
open to every role through `resolve_viewer` (an agent token names its agent_id). A
session's items are visible to every agent of its user; nothing crosses users.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from memory.api.deps import PrincipalDep
from memory.api.identity import require_writer, resolve_viewer
from memory.api.schemas import Content, Identifier, Metadata, Role, Strict
from memory.clients.redis import get_redis
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.service import capture_episodes
from memory.errors import InvalidInputError
from memory.ops.audit import record_event
from memory.working.service import (
    ItemInput,
    PromotionReason,
    WorkingItem,
    list_items,
    promotion_episodes,
    put_items,
    remove_items,
    select_for_promotion,
)
from tasks.pipeline import enqueue_episodes

router = APIRouter(tags=["working memory"])
SessionId = Annotated[Identifier, Path()]


class WorkingItemIn(Strict):
    content: Content
    activation: float = Field(1.0, ge=0, le=1000)
    metadata: Metadata = Field(default_factory=dict)
    role: Role = "assistant"
    speaker: Annotated[str, Field(min_length=1, max_length=128)] | None = None


class WorkingPut(Strict):
    user_id: Identifier
    agent_id: Identifier
    items: list[WorkingItemIn] = Field(min_length=1, max_length=500)


class WorkingItemOut(BaseModel):
    hash: str
    content: str
    activation: float
    agent_id: str
    role: str
    speaker: str | None
    metadata: dict[str, Any]
    hits: int
    created_at: datetime
    updated_at: datetime


class WorkingList(BaseModel):
    session_id: str
    items: list[WorkingItemOut]
    evicted: int = 0


class PromoteIn(Strict):
    user_id: Identifier
    agent_id: Identifier | None = None
    reason: PromotionReason


class PromoteOut(BaseModel):
    reason: str
    promoted: int
    episode_ids: list[uuid.UUID]
    remaining: int


def _out(items: list[WorkingItem]) -> list[WorkingItemOut]:
    return [WorkingItemOut.model_validate(item, from_attributes=True) for item in items]


@router.put("/v1/sessions/{session_id}/working", response_model=WorkingList)
def put_working(session_id: SessionId, body: WorkingPut, principal: PrincipalDep) -> WorkingList:
    """Add items, or raise the activation of items already held (same content)."""
    require_writer(principal, body.user_id)
    result = put_items(
        client=get_redis(),
        tenant_id=principal.tenant_id,
        user_id=body.user_id,
        session_id=session_id,
        agent_id=body.agent_id,
        items=[ItemInput(**item.model_dump()) for item in body.items],
        settings=get_settings().working,
    )
    return WorkingList(session_id=session_id, items=_out(result.items), evicted=result.evicted)


@router.get("/v1/sessions/{session_id}/working", response_model=WorkingList)
def get_working(
    session_id: SessionId,
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
) -> WorkingList:
    """The session's items, highest activation first."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
    items = list_items(
        client=get_redis(),
        tenant_id=viewer.tenant_id,
        user_id=viewer.user_id,
        session_id=session_id,
    )
    return WorkingList(session_id=session_id, items=_out(items))


@router.post("/v1/sessions/{session_id}/promote", response_model=PromoteOut)
def promote_working(session_id: SessionId, body: PromoteIn, principal: PrincipalDep) -> PromoteOut:
    """Promote into long-term memory: on compaction the items at or above
    `working.promoteThreshold`, on reset or end all of them. Idempotent."""
    require_writer(principal, body.user_id)
    if principal.role == "agent" and body.agent_id is None:
        raise InvalidInputError("agent_id: field required for agent tokens")
    client, settings = get_redis(), get_settings()
    scope = {"tenant_id": principal.tenant_id, "user_id": body.user_id, "session_id": session_id}
    items = list_items(client=client, **scope)
    chosen = select_for_promotion(
        items, reason=body.reason, threshold=settings.working.promote_threshold
    )
    episodes = promotion_episodes(
        user_id=body.user_id, session_id=session_id, items=chosen, reason=body.reason
    )
    results: list[tuple[uuid.UUID, bool]] = []
    if episodes:
        with session_scope() as session:
            results = capture_episodes(
                session=session, tenant_id=principal.tenant_id, episodes=episodes
            )
            record_event(
                session=session,
                tenant_id=principal.tenant_id,
                user_id=body.user_id,
                actor=principal.actor,
                action="working.promoted",
                entity_type="session",
                entity_id=session_id[:64],  # the audit column is shorter than session ids
                reason=body.reason,
                data={
                    "session_id": session_id,
                    "agent_id": body.agent_id,
                    "items": len(chosen),
                    "episodes": [str(i) for i, _ in results],
                },
            )
        enqueue_episodes([episode_id for episode_id, created in results if created])
    remove_items(client=client, **scope, hashes=[item.hash for item in chosen])
    return PromoteOut(
        reason=body.reason,
        promoted=len(chosen),
        episode_ids=[episode_id for episode_id, _ in results],
        remaining=len(items) - len(chosen),
    )
