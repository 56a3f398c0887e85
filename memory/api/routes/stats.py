"""GET /v1/stats: the same counts as `muma stats --json`, for what the caller may see."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier
from memory.config import get_settings
from memory.db import session_scope
from memory.ops.stats import user_stats

router = APIRouter(tags=["stats"])


@router.get("/v1/stats")
def get_stats(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
) -> dict[str, Any]:
    """Counts by status, kind, domain, visibility and agent, the activation histogram,
    links, open conflicts, and pipeline and dead-letter counts. Any role; an agent (or a
    call naming agent_id) only counts the notes that agent may see; a token bound to a
    user gets no tenant-wide count."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        return user_stats(
            session=session,
            viewer=viewer,
            settings=get_settings(),
            tenant_wide=principal.user_id is None,
        )
