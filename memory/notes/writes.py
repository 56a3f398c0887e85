"""Compiled UPDATEs of a note's columns by id, for the write path's hot statements."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import bindparam, update

from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.types import Uuid


@cache
def note_update(columns: tuple[str, ...]) -> CompiledStatement:
    """`UPDATE notes SET <column> = :<column>, ... WHERE id = :note_id`: values keyed by
    column name (vectors as `VectorParam`, since bind processors do not run)."""
    table = Note.__table__
    return CompiledStatement(
        update(table)
        .where(table.c.id == bindparam("note_id", type_=Uuid))
        .values({name: bindparam(name, type_=table.c[name].type) for name in columns})
    )


@cache
def note_derived_update(columns: tuple[str, ...]) -> CompiledStatement:
    """`note_update` of derived columns (windows): not an edit, so updated_at, the time of
    the note's last change for sync and export, stays as it is (its ORM onupdate would
    otherwise stamp the write)."""
    table = Note.__table__
    values: dict[str, Any] = {name: bindparam(name, type_=table.c[name].type) for name in columns}
    values["updated_at"] = table.c.updated_at
    return CompiledStatement(
        update(table).where(table.c.id == bindparam("note_id", type_=Uuid)).values(values)
    )
