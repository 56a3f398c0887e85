"""Who sees which note: the visibility rules of DESIGN.md §7, in SQL and in Python.

Invariants: every clause is scoped to one tenant and one user (nothing crosses users);
`visible_clause` and `can_see` implement the same rule (tests check them against each
other); an agent viewer never sees `user-only` notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, false, func, or_, select
from sqlalchemy.orm import Session

from memory.access.models import Agent
from memory.config import Settings
from memory.notes.models import Note


@dataclass(frozen=True)
class Viewer:
    """Whose memories are read, and through which agent (None: user-level access)."""

    tenant_id: str
    user_id: str
    agent_id: str | None
    domains: frozenset[str] = frozenset()
    can_see_private: bool = False

    @property
    def user_level(self) -> bool:
        return self.agent_id is None


def visible_clause(
    viewer: Viewer, note: type[Note] = Note, *, scope_by_index: bool = True
) -> ColumnElement[bool]:
    """The viewer's notes. `scope_by_index=False` states the same tenant and user
    condition in a form no index serves (coalesce of NOT NULL columns): for a query whose
    candidates already come from a per-user index (the per-user term keys, a user's
    partition of note_vectors), where the planner would otherwise AND in a bitmap of the
    user's whole scope (98k entries and 6 ms at 100k notes) that filters nothing."""
    if scope_by_index:
        scope = and_(note.tenant_id == viewer.tenant_id, note.user_id == viewer.user_id)
    else:
        scope = and_(
            func.coalesce(note.tenant_id, "") == viewer.tenant_id,
            func.coalesce(note.user_id, "") == viewer.user_id,
        )
    if viewer.user_level:
        return scope
    own = and_(note.agent_id == viewer.agent_id, note.visibility != "user-only")
    rules = [own, note.visibility == "open"]
    if viewer.domains:
        rules.append(and_(note.visibility == "scoped", note.domain.in_(sorted(viewer.domains))))
    rules.append(note.visibility == "private" if viewer.can_see_private else false())
    return and_(scope, or_(*rules))


def can_see_attributes(
    viewer: Viewer, *, agent_id: str | None, visibility: str | None, domain: str | None
) -> bool:
    """The visibility rule on bare attributes (events, index rows), tenant/user already checked.

    Fails closed: an unknown or missing visibility is visible at user level only.
    """
    if viewer.user_level:
        return True
    if visibility == "user-only" or visibility not in ("open", "scoped", "private"):
        return False
    if (agent_id is not None and agent_id == viewer.agent_id) or visibility == "open":
        return True
    if visibility == "scoped":
        return domain is not None and domain in viewer.domains
    return visibility == "private" and viewer.can_see_private


def can_see(viewer: Viewer, note: Note) -> bool:
    if note.tenant_id != viewer.tenant_id or note.user_id != viewer.user_id:
        return False
    return can_see_attributes(
        viewer, agent_id=note.agent_id, visibility=note.visibility, domain=note.domain
    )


def agent_viewer(
    *, session: Session, settings: Settings, tenant_id: str, user_id: str, agent_id: str
) -> Viewer:
    """An agent's view: its domains and canSeePrivate from the agents table or settings."""
    row = session.scalar(
        select(Agent).where(Agent.tenant_id == tenant_id, Agent.agent_id == agent_id)
    )
    configured = settings.agent_memory.get(agent_id)
    domains: set[str] = set(row.domains if row else [])
    private = bool(row.can_see_private) if row else False
    if configured is not None:
        domains |= set(configured.domains)
        private = private or configured.can_see_private
    return Viewer(tenant_id, user_id, agent_id, frozenset(domains), private)
