"""Agents: list (any role), configure (admin not bound to a user), and "which agent knows
about X" (L3).

The list is the tenant's configuration (ids, domains, private access), which holds no
user's data, so a user-bound token reads it too; changing an agent changes what it reads
of every user, so a user-bound admin may not (403).

Agent search counts only notes the caller may see: an agent token names its agent_id
and gets that agent's view; other roles search at user level or as a named agent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from memory.access.agents import AgentView, list_agents, upsert_agent
from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep, require_roles
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier, NotBlank, Strict
from memory.commons.service import search_agents
from memory.config import get_settings
from memory.db import session_scope

router = APIRouter(tags=["agents"])
Domain = Annotated[str, Field(min_length=1, max_length=64)]


class AgentOut(BaseModel):
    agent_id: str
    display_name: str | None
    domains: list[str]
    can_see_private: bool
    source: str


class AgentList(BaseModel):
    agents: list[AgentOut]


class AgentPut(Strict):
    display_name: Annotated[str, Field(max_length=256)] | None = None
    domains: list[Domain] | None = Field(None, max_length=64)
    can_see_private: bool | None = None


class AgentSearchIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    query: Annotated[str, Field(min_length=1, max_length=2000), NotBlank]
    limit: int = Field(10, ge=1, le=100)


class AgentMatch(BaseModel):
    agent_id: str
    score: float
    note_count: int
    topics: list[str]
    last_write_at: datetime


class AgentSearchOut(BaseModel):
    agents: list[AgentMatch]


def _out(view: AgentView) -> AgentOut:
    return AgentOut.model_validate(view, from_attributes=True)


@router.get("/v1/agents", response_model=AgentList)
def get_agents(principal: PrincipalDep) -> AgentList:
    """The tenant's agents with their effective domains (database and configuration)."""
    with session_scope() as session:
        views = list_agents(session=session, tenant_id=principal.tenant_id, settings=get_settings())
    return AgentList(agents=[_out(v) for v in views])


@router.put("/v1/agents/{agent_id}", response_model=AgentOut)
def put_agent(
    agent_id: Annotated[Identifier, Path()],
    body: AgentPut,
    principal: Annotated[Principal, Depends(require_roles("admin", unbound=True))],
) -> AgentOut:
    """Create or update an agent (admin bound to no user); fields left out stay as they are."""
    settings = get_settings()
    with session_scope() as session:
        upsert_agent(
            session=session,
            tenant_id=principal.tenant_id,
            agent_id=agent_id,
            actor=principal.actor,
            display_name=body.display_name,
            domains=body.domains,
            can_see_private=body.can_see_private,
            by=principal,
        )
        views = list_agents(session=session, tenant_id=principal.tenant_id, settings=settings)
    return _out(next(v for v in views if v.agent_id == agent_id.strip()))


@router.post("/v1/agents/search", response_model=AgentSearchOut)
def post_agent_search(body: AgentSearchIn, principal: PrincipalDep) -> dict[str, Any]:
    """Agents ranked by how much they know about `query` among notes the caller sees."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=body.agent_id
        )
        found = search_agents(session=session, viewer=viewer, query=body.query, limit=body.limit)
    return {"agents": [AgentMatch.model_validate(f, from_attributes=True) for f in found]}
