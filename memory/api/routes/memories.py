"""Explicit memories and single-note reads: write, get, history, forget (erase)."""

from __future__ import annotations

import time
import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from memory.api.deps import PrincipalDep
from memory.api.errors import OVERLOADED_RESPONSE
from memory.api.identity import require_writer, resolve_viewer
from memory.api.schemas import (
    ForgetOut,
    Identifier,
    MemoryAccepted,
    MemoryIn,
    MemoryWritten,
    NoteOut,
)
from memory.api.serialize import note_out
from memory.clients.redis import get_redis
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.backlog import require_capacity
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.erasure.forget import forget_located, locate_memory
from memory.erasure.outside import purge_outside
from memory.errors import AccessDeniedError
from memory.notes.service import episode_outcome, get_visible_note, note_history
from memory.trust.origin import declared_origin
from tasks.pipeline import enqueue_episodes

router = APIRouter(tags=["memories"])
WAIT_POLL_SECONDS = 0.05


@router.post(
    "/v1/memories",
    status_code=202,
    response_model=MemoryAccepted,
    responses={201: {"model": MemoryWritten}, **OVERLOADED_RESPONSE},
)
def write_memory(
    body: MemoryIn,
    principal: PrincipalDep,
    wait: Annotated[float | None, Query(ge=0, le=30)] = None,
) -> MemoryAccepted | JSONResponse:
    """Store an explicit memory through the write path; `?wait=S` waits up to S seconds."""
    require_writer(principal, body.user_id)
    options = body.model_dump(
        include={"kind", "domain", "visibility", "tags", "pinned", "ttl"}, exclude_none=True
    )
    episode = EpisodeInput(
        user_id=body.user_id,
        agent_id=body.agent_id,
        session_id=body.session_id or f"explicit:{body.agent_id}",
        role="user",
        content=body.content,
        speaker=body.speaker,
        metadata=body.metadata,
        options=options,
        source="explicit",
        origin=declared_origin(body.origin),
    )
    with session_scope() as session:
        require_capacity(session=session, limit=get_settings().pipeline.max_backlog)
        [(episode_id, _)] = capture_episodes(
            session=session, tenant_id=principal.tenant_id, episodes=[episode]
        )
    enqueue_episodes([episode_id])
    if wait:
        written = _wait_for(episode_id, wait)
        if written is not None:
            return JSONResponse(written.model_dump(mode="json"), status_code=201)
    return MemoryAccepted(episode_id=episode_id)


def _wait_for(episode_id: uuid.UUID, seconds: float) -> MemoryWritten | None:
    deadline = time.monotonic() + seconds
    while True:
        with session_scope() as session:
            status, decision, note_ids = episode_outcome(session=session, episode_id=episode_id)
        if status == "done":
            return MemoryWritten(
                episode_id=episode_id, note_ids=note_ids, decision=decision or "ADD"
            )
        if status == "failed" or time.monotonic() >= deadline:
            return None
        time.sleep(WAIT_POLL_SECONDS)


@router.get("/v1/memories/{note_id}", response_model=NoteOut)
def get_memory(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
) -> NoteOut:
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        note = get_visible_note(session=session, viewer=viewer, note_id=note_id)
        return note_out(session, viewer, note, with_links=True)


@router.get("/v1/memories/{note_id}/history", response_model=list[NoteOut])
def get_memory_history(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
) -> list[NoteOut]:
    """Every version of the memory, oldest first, with validity intervals."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        return [
            note_out(session, viewer, n)
            for n in note_history(session=session, viewer=viewer, note_id=note_id)
        ]


@router.delete("/v1/memories/{note_id}", response_model=ForgetOut)
def delete_memory(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    reason: Annotated[str | None, Query(max_length=500)] = None,
) -> ForgetOut:
    """Forget a memory: its content leaves every place it reached (its versions, the
    turns it came from, other notes' windows and words, knowledge built from it, working
    memory, synced files); a tombstone of ids, actor and reason stays. To hide a memory
    and keep it restorable, archive it instead."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        if principal.role == "viewer":
            raise AccessDeniedError("role 'viewer' may not forget memories", role="viewer")
        ref = locate_memory(session=session, viewer=viewer, note_id=note_id)
    with session_scope() as session:
        report = forget_located(session=session, ref=ref, actor=principal.actor, reason=reason)
    outside = purge_outside(report, client=get_redis(), settings=get_settings())
    return ForgetOut(id=note_id, **report.summary(), **outside)
