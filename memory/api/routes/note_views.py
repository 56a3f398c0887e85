"""Inspecting one memory: its link neighbourhood, activation over time, provenance
episodes and audit trail (the dashboard's note detail and graph pages).

Access: the note must be visible to the caller's viewer (404 otherwise, existence is not
leaked). Raw provenance episodes and the audit trail are user-level data: they are
refused to agent tokens and to calls made as an agent (an episode may hold what another
agent may not see).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query

from memory.access.policy import Viewer
from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier
from memory.config import get_settings
from memory.db import session_scope
from memory.errors import AccessDeniedError
from memory.links.graph import MAX_DEPTH, neighbourhood
from memory.notes.inspect import activation_profile, lineage_events, provenance_episodes
from memory.notes.service import get_visible_note, note_history
from memory.types import utcnow

router = APIRouter(tags=["memories"])
UserQuery = Annotated[Identifier | None, Query()]


def _user_level(principal: Principal, viewer: Viewer) -> None:
    if principal.role == "agent" or not viewer.user_level:
        raise AccessDeniedError("raw episodes and audit events are readable at user level only")


@router.get("/v1/memories/{note_id}/graph")
def get_memory_graph(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: UserQuery = None,
    agent_id: UserQuery = None,
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = 1,
) -> dict[str, Any]:
    """Nodes and edges within `depth` hops; only notes the caller may see."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        centre = get_visible_note(session=session, viewer=viewer, note_id=note_id)
        return neighbourhood(session=session, viewer=viewer, centre=centre, depth=depth)


@router.get("/v1/memories/{note_id}/activation")
def get_memory_activation(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: UserQuery = None,
    agent_id: UserQuery = None,
) -> dict[str, Any]:
    """Access history, base level B and retention R now, and B over time."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        note = get_visible_note(session=session, viewer=viewer, note_id=note_id)
        return activation_profile(note, get_settings(), utcnow())


@router.get("/v1/memories/{note_id}/provenance")
def get_memory_provenance(
    note_id: uuid.UUID,
    principal: PrincipalDep,
    user_id: UserQuery = None,
    agent_id: UserQuery = None,
) -> dict[str, Any]:
    """The raw episodes every version of this memory came from, and its audit trail."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        _user_level(principal, viewer)
        versions = note_history(session=session, viewer=viewer, note_id=note_id)
        ids = [v.id for v in versions]
        return {
            "episodes": provenance_episodes(session=session, note_ids=ids),
            "events": lineage_events(
                session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id, note_ids=ids
            ),
        }
