"""Agents of a tenant: their domains and canSeePrivate (DESIGN.md §7), audited.

Invariants: an agent's effective view is the union of its `agents` row and
`settings.agent_memory[agent_id]` (the same merge `agent_viewer` applies), and listings
show that effective view; every change is recorded in the audit log with old and new
values; domains are stored trimmed, deduplicated and sorted (matching note domains is
exact, so "Finance" and "finance" are different domains). An agent's rights decide what
it reads of every user of the tenant, so only an admin token bound to no user (`by`), or
the machine's operator (the CLI, `by=None`), creates or changes an agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.access.models import Agent
from memory.access.tokens import Principal
from memory.config import Settings
from memory.errors import AccessDeniedError, InvalidInputError, NotFoundError
from memory.ops.audit import record_event

MAX_DOMAIN_LENGTH = 64
MAX_AGENT_ID_LENGTH = 128


@dataclass(frozen=True)
class AgentView:
    """An agent as seen by callers: stored values merged with configured ones."""

    tenant_id: str
    agent_id: str
    display_name: str | None
    domains: list[str]
    can_see_private: bool
    source: str  # "database", "config" or "both"


def clean_domains(domains: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    for raw in domains:
        domain = raw.strip()
        if not domain:
            continue
        if len(domain) > MAX_DOMAIN_LENGTH:
            raise InvalidInputError(
                f"domains: '{domain[:20]}…' is longer than {MAX_DOMAIN_LENGTH} characters"
            )
        seen.add(domain)
    return sorted(seen)


def _snapshot(agent: Agent) -> dict[str, Any]:
    return {
        "display_name": agent.display_name,
        "domains": list(agent.domains or []),
        "can_see_private": bool(agent.can_see_private),
    }


def _get(session: Session, tenant_id: str, agent_id: str) -> Agent | None:
    return session.scalar(
        select(Agent).where(Agent.tenant_id == tenant_id, Agent.agent_id == agent_id)
    )


def _apply(
    agent: Agent,
    display_name: str | None,
    domains: Iterable[str] | None,
    can_see_private: bool | None,
) -> None:
    if display_name is not None:
        agent.display_name = display_name.strip() or None
    if domains is not None:
        agent.domains = clean_domains(domains)
    if can_see_private is not None:
        agent.can_see_private = can_see_private


def require_agent_authority(by: Principal | None) -> None:
    """AccessDeniedError unless `by` may change agents: an unbound admin, or the CLI."""
    if by is None:
        return
    if by.role != "admin":
        raise AccessDeniedError(f"role '{by.role}' may not change agents", role=by.role)
    if by.user_id is not None:
        raise AccessDeniedError(
            "an agent's rights apply to every user of the tenant: a token bound to a user "
            "may not change them",
            user_id=by.user_id,
        )


def upsert_agent(
    *,
    session: Session,
    tenant_id: str,
    agent_id: str,
    actor: str,
    display_name: str | None = None,
    domains: Iterable[str] | None = None,
    can_see_private: bool | None = None,
    by: Principal | None = None,
) -> tuple[Agent, bool]:
    """Create the agent or update the given fields (None leaves a field as it is), as `by`
    (see `require_agent_authority`). Returns (row, created).
    """
    require_agent_authority(by)
    agent_id = agent_id.strip()
    if not agent_id or len(agent_id) > MAX_AGENT_ID_LENGTH:
        raise InvalidInputError(f"agent_id must be 1 to {MAX_AGENT_ID_LENGTH} characters")
    agent = _get(session, tenant_id, agent_id)
    if agent is None:
        agent = Agent(tenant_id=tenant_id, agent_id=agent_id, domains=[], can_see_private=False)
        _apply(agent, display_name, domains, can_see_private)
        session.add(agent)
        session.flush()
        _audit(session, agent, actor, "agent.created", None)
        return agent, True
    return _update(session, agent, actor, display_name, domains, can_see_private), False


def update_agent(
    *,
    session: Session,
    tenant_id: str,
    agent_id: str,
    actor: str,
    display_name: str | None = None,
    domains: Iterable[str] | None = None,
    can_see_private: bool | None = None,
    by: Principal | None = None,
) -> Agent:
    """Change the given fields of an existing agent, as `by`; NotFoundError if none."""
    require_agent_authority(by)
    agent = _get(session, tenant_id, agent_id)
    if agent is None:
        raise NotFoundError(f"no agent {agent_id!r} in tenant {tenant_id!r}", agent_id=agent_id)
    return _update(session, agent, actor, display_name, domains, can_see_private)


def _update(
    session: Session,
    agent: Agent,
    actor: str,
    display_name: str | None,
    domains: Iterable[str] | None,
    can_see_private: bool | None,
) -> Agent:
    before = _snapshot(agent)
    _apply(agent, display_name, domains, can_see_private)
    if _snapshot(agent) != before:
        session.flush()
        _audit(session, agent, actor, "agent.updated", before)
    return agent


def _audit(
    session: Session, agent: Agent, actor: str, action: str, before: dict[str, Any] | None
) -> None:
    record_event(
        session=session,
        tenant_id=agent.tenant_id,
        actor=actor,
        action=action,
        entity_type="agent",
        entity_id=agent.agent_id[:64],  # the audit column is shorter than agent ids
        data={"agent_id": agent.agent_id, "old": before, "new": _snapshot(agent)},
    )


def list_agents(*, session: Session, tenant_id: str, settings: Settings) -> list[AgentView]:
    """Every agent of the tenant, stored or configured, with its effective view."""
    rows = {
        a.agent_id: a for a in session.scalars(select(Agent).where(Agent.tenant_id == tenant_id))
    }
    views = []
    for agent_id in sorted(set(rows) | set(settings.agent_memory)):
        row, configured = rows.get(agent_id), settings.agent_memory.get(agent_id)
        domains = set(row.domains or []) if row else set()
        private = bool(row.can_see_private) if row else False
        name = row.display_name if row else None
        if configured is not None:
            domains |= set(configured.domains)
            private = private or configured.can_see_private
            name = name or configured.display_name
        source = "both" if row and configured else "database" if row else "config"
        views.append(AgentView(tenant_id, agent_id, name, sorted(domains), private, source))
    return views
