"""Where an erasure finds the rows of a user (or of a whole tenant): derived from the catalog
(`memory.erasure.catalog.PLACES`) and the schema's foreign keys, never from a second list.

Scopes (the catalog's): `user` rows carry tenant_id and user_id; `note` rows are found
through the foreign keys to the user's notes and episodes; `mirror` rows follow notes by
trigger (never deleted here, only counted); `episode` rows (dead letters) through their
episode_id; `tenant` rows only with the tenant, except api_tokens bound to the user;
`system` never.

Invariants: every condition is SQL on the alias `t` with the parameters of
`Target.params()`; the units are ordered so that rows found through another table's rows
go before that table's (children before parents); a parent's children are found by its
ids, through the foreign keys' indexes, before the parent rows go.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

import memory.models  # noqa: F401 - every table's model is registered with the metadata
from memory.db import Base
from memory.erasure.catalog import PLACE_BY_TABLE, PLACES, Place

# The parents: tables other places are found through. Episodes first: an episode deleted
# is never extracted again, so the pipeline stops making notes for the user.
PARENTS = ("episodes", "notes")
# Places whose rows point at a parent without a foreign key: the scope's column.
SCOPE_PARENT = {"mirror": ("note_id", "notes"), "episode": ("episode_id", "episodes")}
# Tenant-level places that hold rows of one user: those go with the user.
BOUND_TO_USER = ("api_tokens",)
# The parameters, typed: one is compared with varchar and text columns alike.
TENANT, USER = "CAST(:tenant_id AS text)", "CAST(:user_id AS text)"
# Events about a user's tokens are tenant events (no user_id): found through the tokens,
# so events go before api_tokens, and by `data.user_id` once the tokens are gone.
TOKEN_EVENTS = (
    f" OR (t.tenant_id = {TENANT} AND t.user_id IS NULL AND (t.data->>'user_id' = {USER}"
    " OR (t.entity_type = 'token' AND t.entity_id IN (SELECT CAST(k.id AS text) FROM"
    f" api_tokens k WHERE k.tenant_id = {TENANT} AND k.user_id = {USER}))))"
)


@dataclass(frozen=True)
class Target:
    """Whose rows: one user of a tenant, or (user_id None) the whole tenant."""

    tenant_id: str
    user_id: str | None
    erasure_id: uuid.UUID

    def params(self) -> dict[str, Any]:
        return {"tenant_id": self.tenant_id, "user_id": self.user_id, "erasure_id": self.erasure_id}

    @property
    def whole_tenant(self) -> bool:
        return self.user_id is None


@dataclass(frozen=True)
class Unit:
    """One step's work on one table: `parent` units delete a batch of ids with their
    `children` (table, column) and count their `mirrors`; the others delete by condition."""

    table: str
    children: tuple[tuple[str, str], ...] = ()
    mirrors: tuple[str, ...] = ()

    @property
    def parent(self) -> bool:
        return self.table in PARENTS


def owner_condition(target: Target, alias: str = "t") -> str:
    """The target's rows of a table with tenant_id and user_id."""
    if target.whole_tenant:
        return f"{alias}.tenant_id = {TENANT}"
    return f"{alias}.tenant_id = {TENANT} AND {alias}.user_id = {USER}"


def _parent_rows(column: str, parent: str, target: Target) -> str:
    inner = owner_condition(target, "p")
    return f"t.{column} IN (SELECT p.id FROM {parent} p WHERE {inner})"


def condition(place: Place, target: Target) -> str | None:
    """SQL selecting the target's rows of `place` (alias t); None: it has none to erase."""
    if place.scope in ("user", "mirror"):
        extra = TOKEN_EVENTS if place.table == "events" and not target.whole_tenant else ""
        return f"({owner_condition(target)}{extra})"
    if place.scope == "note":
        links = [_parent_rows(column, parent, target) for column, parent in _foreign_keys(place)]
        return "(" + " OR ".join(links) + ")"
    if place.scope == "episode":
        column, parent = SCOPE_PARENT["episode"]
        # A letter whose episode is gone can only be an erased user's (episodes are
        # deleted by erasures alone), recorded after its episode went: it has no tenant.
        orphan = (
            f"(t.{column} IS NOT NULL AND NOT EXISTS"
            f" (SELECT 1 FROM {parent} o WHERE o.id = t.{column}))"
        )
        own = f"t.tenant_id = {TENANT} OR " if target.whole_tenant else ""
        return f"({own}{_parent_rows(column, parent, target)} OR {orphan})"
    if place.scope == "tenant":
        if target.whole_tenant:
            mine = " AND t.id <> :erasure_id" if place.table == "erasures" else ""
            return f"(t.tenant_id = {TENANT}{mine})"
        return f"({owner_condition(target)})" if place.table in BOUND_TO_USER else None
    return None  # system


def _foreign_keys(place: Place) -> list[tuple[str, str]]:
    """(column, parent table) of the place's foreign keys to the parents."""
    table = Base.metadata.tables[place.table]
    return sorted(
        (fk.parent.name, fk.column.table.name)
        for fk in table.foreign_keys
        if fk.column.table.name in PARENTS and fk.column.table.name != place.table
    )


def _children(parent: str) -> tuple[tuple[str, str], ...]:
    """(table, column) of every place found through `parent`'s ids, but its mirrors."""
    found: list[tuple[str, str]] = []
    for place in PLACES:
        if place.table == parent or place.scope in ("mirror", "system"):
            continue
        found += [(place.table, c) for c, p in _foreign_keys(place) if p == parent]
        if place.scope == "episode" and SCOPE_PARENT["episode"][1] == parent:
            found.append((place.table, SCOPE_PARENT["episode"][0]))
    return tuple(found)


@cache
def units(whole_tenant: bool) -> tuple[Unit, ...]:
    """The order of the work: the parents with their children, then every other place
    with rows to erase in catalog order, the tokens last (events are found through them)."""
    probe = Target("t", None if whole_tenant else "u", uuid.UUID(int=0))
    mirrors = tuple(p.table for p in PLACES if p.scope == "mirror")
    plan = [
        Unit(parent, _children(parent), mirrors if parent == SCOPE_PARENT["mirror"][1] else ())
        for parent in PARENTS
    ]
    rest = [
        p.table
        for p in PLACES
        if p.table not in PARENTS and p.scope != "mirror" and condition(p, probe) is not None
    ]
    rest.sort(key=lambda table: table in BOUND_TO_USER)  # stable: catalog order otherwise
    return (*plan, *(Unit(table) for table in rest))


def counted_places(target: Target) -> list[tuple[Place, str]]:
    """Every place with rows of the target, with its condition: what the census counts."""
    found = [(p, condition(p, target)) for p in PLACES]
    return [(p, c) for p, c in found if c is not None]


def place(table: str) -> Place:
    return PLACE_BY_TABLE[table]
