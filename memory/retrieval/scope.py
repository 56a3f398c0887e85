"""Who reads and with which filters, as the parameters of the read path's compiled
statements (`memory.db.CompiledStatement`).

Invariants: `ReadScope.shape` is everything that changes the SQL of the access rules and
filters (which visibility rules apply, which filters are set); every value (ids,
domains, filter values, the time) is a named parameter given by `ReadScope.params`. So
a statement built from a shape alone, and cached by it, is right for every viewer and
filter of that shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    DateTime,
    String,
    and_,
    any_,
    bindparam,
    literal_column,
    or_,
)
from sqlalchemy.dialects.postgresql import ARRAY

from memory.access.policy import (
    Viewer,
    ViewerShape,
    bound_visible_clause,
    viewer_params,
    viewer_shape,
)
from memory.notes.models import Note
from memory.types import NOTE_KINDS, utcnow

# One parameter per kind a search may filter on (memory.types.NOTE_KINDS).
KIND_PARAMS = tuple(f"filter_kind_{i}" for i in range(1, len(NOTE_KINDS) + 1))
# Caches a statement builder by its shape arguments (shape, counts, limits): a few dozen
# compiled statements in practice.
shape_cached = lru_cache(maxsize=256)


@dataclass(frozen=True)
class SearchFilters:
    kinds: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    include_archived: bool = False

    @property
    def narrows(self) -> bool:
        """Whether a filter restricts the notes searched (archived notes only widen)."""
        return bool(self.kinds or self.domains) or self.since is not None or self.until is not None


class ScopeShape(NamedTuple):
    """Which visibility rules and which filters a statement holds (its cache key)."""

    viewer: ViewerShape
    kinds: bool
    domains: bool
    since: bool
    until: bool
    include_archived: bool


@dataclass(frozen=True)
class ReadScope:
    """One search's viewer and filters; `now` decides which notes have expired."""

    viewer: Viewer
    filters: SearchFilters = field(default_factory=SearchFilters)
    now: datetime = field(default_factory=utcnow)

    @property
    def shape(self) -> ScopeShape:
        f = self.filters
        return ScopeShape(
            viewer_shape(self.viewer),
            bool(f.kinds),
            bool(f.domains),
            f.since is not None,
            f.until is not None,
            f.include_archived,
        )

    @property
    def params(self) -> dict[str, Any]:
        f = self.filters
        return {
            **viewer_params(self.viewer),
            "now": self.now,
            "filter_kinds": list(f.kinds),
            # Each known kind once, one parameter each: the dense route asks each for
            # a pool of its own (`routes._nearest_per_kind`); unused ones are NULL.
            **_kind_params(f.kinds),
            "filter_domains": list(f.domains),
            "filter_since": f.since,
            "filter_until": f.until,
        }


def _kind_params(kinds: tuple[str, ...]) -> dict[str, str | None]:
    known = [k for k in NOTE_KINDS if k in kinds]
    return {name: known[i] if i < len(known) else None for i, name in enumerate(KIND_PARAMS)}


def scope_conditions(
    shape: ScopeShape, note: type[Note] = Note, *, scope_by_index: bool = True
) -> ColumnElement[bool]:
    """Access rules and filters of every scope of this shape (DESIGN.md §7): visible,
    current, not expired, active (or archived when asked for). `scope_by_index=False` for
    routes whose candidates come from a per-user index (see `bound_visible_clause`)."""
    # Constant per shape, so written as literals: the planner sees the same `IN` as ever.
    statuses = ("active", "archived") if shape.include_archived else ("active",)
    parts: list[ColumnElement[bool]] = [
        bound_visible_clause(shape.viewer, note, scope_by_index=scope_by_index),
        note.status.in_([_constant(s) for s in statuses]),
        note.valid_to.is_(None),
        unexpired(note),
    ]
    return and_(*parts, *filter_conditions(shape, note))


def unexpired(table: Any) -> ColumnElement[bool]:
    """No TTL on `table`'s row (notes, or their mirror note_vectors), or one not yet
    passed at the scope's `now`: a note past it is unreadable before the sweep expires it."""
    now = bindparam("now", type_=DateTime(timezone=True))
    return or_(table.expires_at.is_(None), table.expires_at > now)


def filter_conditions(shape: ScopeShape, table: Any) -> list[ColumnElement[bool]]:
    """The search filters of this shape on `table`'s kind, domain and occurred_at (notes,
    or their mirror note_vectors, which carries the same three columns)."""
    parts: list[ColumnElement[bool]] = []
    if shape.kinds:
        parts.append(table.kind == any_(bindparam("filter_kinds", type_=ARRAY(String))))
    if shape.domains:
        parts.append(table.domain == any_(bindparam("filter_domains", type_=ARRAY(String))))
    if shape.since:
        parts.append(table.occurred_at >= bindparam("filter_since", type_=DateTime(timezone=True)))
    if shape.until:
        parts.append(table.occurred_at <= bindparam("filter_until", type_=DateTime(timezone=True)))
    return parts


def _constant(value: str) -> ColumnElement[str]:
    """A fixed status name as an SQL literal (only ever the constants above)."""
    return literal_column(f"'{value}'", String)


def window_usable(readers: Any) -> ColumnElement[bool]:
    """An agent viewer may rank by a note's window: any reader may (NULL), or the window
    names the viewer's agent (memory.access.audience.window_readers). In SQL, so a window
    the agent may not use never takes a place among a route's candidates."""
    return or_(readers.is_(None), bindparam("viewer_agent_id", type_=String) == any_(readers))
