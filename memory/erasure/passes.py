"""The SQL of an erasure: one batch of one unit deleted, and the census of what is left.

Invariants: a batch deletes at most `limit` rows of its table (a parent's: with every row
of its children that points at them, counted per table, and its mirrors counted before
the trigger removes them); each count is of rows this statement removed, so a batch that
a concurrent runner already did counts nothing twice; nothing here commits.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.erasure.plan import Target, Unit, condition, counted_places, owner_condition, place


def _params(sql: str, target: Target, **extra: Any) -> dict[str, Any]:
    """The target's parameters the statement names (text() binds exactly those)."""
    values = {**target.params(), **extra}
    return {k: v for k, v in values.items() if f":{k}" in sql}


def delete_batch(*, session: Session, unit: Unit, target: Target, limit: int) -> dict[str, int]:
    """Delete up to `limit` of the target's rows of the unit; rows removed per table
    (empty when none is left)."""
    if unit.parent:
        return _parent_batch(session, unit, target, limit)
    where = condition(place(unit.table), target)
    sql = (
        f"DELETE FROM {unit.table} WHERE ctid = ANY(ARRAY("
        f"SELECT t.ctid FROM {unit.table} t WHERE {where} LIMIT :limit))"
    )
    removed = session.execute(text(sql), _params(sql, target, limit=limit)).rowcount
    return {unit.table: removed} if removed else {}


def _parent_batch(session: Session, unit: Unit, target: Target, limit: int) -> dict[str, int]:
    where = condition(place(unit.table), target)
    select_ids = f"SELECT t.id FROM {unit.table} t WHERE {where} LIMIT :limit"
    ids: list[uuid.UUID] = list(
        session.execute(text(select_ids), _params(select_ids, target, limit=limit)).scalars()
    )
    if not ids:
        return {}
    removed: dict[str, int] = {}

    def add(table: str, count: int) -> None:
        removed[table] = removed.get(table, 0) + count

    for child, column in unit.children:
        sql = f"DELETE FROM {child} WHERE {column} = ANY(:ids)"
        add(child, session.execute(text(sql), {"ids": ids}).rowcount)
    for mirror in unit.mirrors:  # removed by the trigger with their notes
        where = f"{owner_condition(target)} AND t.note_id = ANY(:ids)"
        sql = f"SELECT count(*) FROM {mirror} t WHERE {where}"
        add(mirror, session.execute(text(sql), _params(sql, target, ids=ids)).scalar_one())
    sql = f"DELETE FROM {unit.table} WHERE id = ANY(:ids)"
    add(unit.table, session.execute(text(sql), {"ids": ids}).rowcount)
    return {table: n for table, n in removed.items() if n}


def census(*, session: Session, target: Target) -> dict[str, int]:
    """The target's rows in every place of the catalog that can hold them, in one
    statement (one snapshot)."""
    found = counted_places(target)
    columns = ", ".join(
        f"(SELECT count(*) FROM {p.table} t WHERE {where}) AS {p.table}" for p, where in found
    )
    sql = f"SELECT {columns}"
    row = session.execute(text(sql), _params(sql, target)).one()
    return {p.table: int(n) for (p, _), n in zip(found, row, strict=True)}
