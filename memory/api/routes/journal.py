"""The turn journal over HTTP: GET /v1/journal, and the recording of what /v1/context
injected (after its answer is sent, as access history is)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Query

from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier
from memory.config import get_settings
from memory.db import session_scope
from memory.journal.service import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    InjectedMemory,
    InjectionScope,
    read_journal,
    record_injection,
)
from memory.retrieval.hits import SearchHit

router = APIRouter(tags=["read"])
log = logging.getLogger(__name__)


@router.get("/v1/journal")
def get_journal(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    session_id: Annotated[Identifier | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """What each captured turn became (stored, merged, revised, a candidate, skipped as
    chatter, dropped, failed) and what each /v1/context answer injected, with scores and
    why, newest first; one session's or every session's. Any role; an agent (or a call
    naming agent_id) sees only the memories that agent may read. No turn or memory text."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        return read_journal(
            session=session,
            viewer=viewer,
            settings=get_settings(),
            session_id=session_id,
            limit=limit,
        )


def record_injection_later(
    background: BackgroundTasks,
    principal: Principal,
    identity: tuple[str | None, str | None, str | None],
    hits: Sequence[SearchHit],
) -> None:
    """Journal the block's memories once the answer is sent; `identity` is the body's
    (user_id, agent_id, session_id), already checked by the search that found `hits`."""
    user_id, agent_id, session_id = identity
    user_id = principal.user_id or user_id
    if not hits or not user_id or not get_settings().journal.record_injections:
        return
    scope = InjectionScope(principal.tenant_id, user_id, agent_id, session_id)
    background.add_task(_record, scope, [InjectedMemory.of(hit) for hit in hits])


def _record(scope: InjectionScope, memories: list[InjectedMemory]) -> None:
    # Best effort, like access history: the answer has already been sent.
    try:
        with session_scope() as session:
            record_injection(session=session, scope=scope, memories=memories)
    except Exception:
        log.warning("could not journal an injection of user %s", scope.user_id, exc_info=True)
