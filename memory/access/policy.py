"""Who sees which note: the visibility rules of DESIGN.md §7, in SQL and in Python.

Invariants: every clause is scoped to one tenant and one user (nothing crosses users);
`visible_clause` and `can_see` implement the same rule (tests check them against each
other); an agent viewer never sees `user-only` notes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, String, and_, any_, bindparam, false, func, or_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from memory.access.audience import require_agent_id
from memory.access.models import Agent
from memory.config import Settings
from memory.db import CompiledStatement
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


class ViewerShape(NamedTuple):
    """What of a viewer decides the SQL of its visibility rule; the rest are values."""

    user_level: bool
    scoped_domains: bool
    can_see_private: bool


def viewer_shape(viewer: Viewer) -> ViewerShape:
    return ViewerShape(viewer.user_level, bool(viewer.domains), viewer.can_see_private)


def viewer_params(viewer: Viewer) -> dict[str, Any]:
    """The values of `bound_visible_clause`'s parameters for this viewer."""
    return {
        "viewer_tenant_id": viewer.tenant_id,
        "viewer_user_id": viewer.user_id,
        "viewer_agent_id": viewer.agent_id,
        "viewer_domains": sorted(viewer.domains),
    }


def visible_clause(viewer: Viewer, note: type[Note] = Note) -> ColumnElement[bool]:
    """The viewer's notes, with the viewer's values in the SQL."""
    return _visible(
        note,
        viewer_shape(viewer),
        True,
        ids=(viewer.tenant_id, viewer.user_id, viewer.agent_id),
        in_domains=lambda column: column.in_(sorted(viewer.domains)),
    )


def bound_visible_clause(
    shape: ViewerShape, note: type[Note] = Note, *, scope_by_index: bool = True
) -> ColumnElement[bool]:
    """`visible_clause` for every viewer of this shape: the ids and domains are the named
    parameters `viewer_params` gives values to (for a `memory.db.CompiledStatement`).

    `scope_by_index=False` states the tenant and user condition in a form no index serves
    (coalesce of NOT NULL columns): for a query whose candidates already come from a
    per-user index (the per-user term keys, a user's partition of note_vectors), where
    the planner would otherwise AND in a bitmap of the user's whole scope (98k entries
    and 6 ms at 100k notes) that filters nothing."""
    ids = tuple(
        bindparam(f"viewer_{name}", type_=String) for name in ("tenant_id", "user_id", "agent_id")
    )
    domains = bindparam("viewer_domains", type_=ARRAY(String))
    return _visible(
        note, shape, scope_by_index, ids=ids, in_domains=lambda column: column == any_(domains)
    )


def _visible(
    note: type[Note],
    shape: ViewerShape,
    scope_by_index: bool,
    *,
    ids: tuple[Any, Any, Any],
    in_domains: Callable[[Any], ColumnElement[bool]],
) -> ColumnElement[bool]:
    tenant_id, user_id, agent_id = ids
    if scope_by_index:
        scope = and_(note.tenant_id == tenant_id, note.user_id == user_id)
    else:
        scope = and_(
            func.coalesce(note.tenant_id, "") == tenant_id,
            func.coalesce(note.user_id, "") == user_id,
        )
    if shape.user_level:
        return scope
    own = and_(note.agent_id == agent_id, note.visibility != "user-only")
    rules = [own, note.visibility == "open"]
    if shape.scoped_domains:
        rules.append(and_(note.visibility == "scoped", in_domains(note.domain)))
    rules.append(note.visibility == "private" if shape.can_see_private else false())
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
    require_agent_id(agent_id)
    rows = _agent_statement().rows(session, {"tenant_id": tenant_id, "agent_id": agent_id})
    row = rows[0] if rows else None
    configured = settings.agent_memory.get(agent_id)
    domains: set[str] = set(row.domains if row else [])
    private = bool(row.can_see_private) if row else False
    if configured is not None:
        domains |= set(configured.domains)
        private = private or configured.can_see_private
    return Viewer(tenant_id, user_id, agent_id, frozenset(domains), private)


@cache
def _agent_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Agent.domains, Agent.can_see_private).where(
            Agent.tenant_id == bindparam("tenant_id", type_=String),
            Agent.agent_id == bindparam("agent_id", type_=String),
        )
    )
