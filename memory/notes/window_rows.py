"""The rows a window is computed from: a session's current, embedded notes by turn.

Invariants: the rows of `session_rows` are every eligible note (current version, not
deleted, embedded, with a turn) of the session from 2 * turns_each_side distinct turns
before the first seed to as many after the last, in (turn_seq, id) order, so every turn
a refreshed window reads is there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Integer, String, and_, bindparam, func, select
from sqlalchemy.orm import Session

from memory.access.audience import Audience
from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.vectors import binary_vector, parse_vector
from memory.notes.window_text import note_line

SessionKey = tuple[str, str, str]  # (tenant_id, user_id, session_id)


def _eligible() -> ColumnElement[bool]:
    """A session's notes that count as window neighbours (the key given as parameters)."""
    return and_(
        Note.tenant_id == bindparam("window_tenant_id", type_=String),
        Note.user_id == bindparam("window_user_id", type_=String),
        Note.session_id == bindparam("window_session_id", type_=String),
        Note.turn_seq.is_not(None),
        Note.embedding.is_not(None),
        Note.valid_to.is_(None),
        Note.status != "deleted",
    )


@dataclass(frozen=True)
class WindowRow:
    """A session's note as the window arithmetic reads it (vectors parsed from binary)."""

    id: uuid.UUID
    turn_seq: int
    tenant_id: str
    user_id: str
    status: str
    audience: Audience
    line: str
    occurred_at: Any
    embedding: Any
    window_embedding: Any
    window_text: str | None
    window_readers: list[str] | None


def parse_row(row: Any) -> WindowRow:
    return WindowRow(
        id=row.id,
        turn_seq=int(row.turn_seq) if row.turn_seq is not None else 0,
        tenant_id=row.tenant_id,
        user_id=row.user_id,
        status=row.status,
        audience=Audience(row.visibility, row.domain, row.agent_id),
        line=note_line(
            index_text=row.index_text,
            content=row.content,
            speaker=row.speaker,
            occurred_at=row.occurred_at,
        ),
        occurred_at=row.occurred_at,
        embedding=parse_vector(row.embedding),
        window_embedding=parse_vector(row.window_embedding),
        window_text=row.window_text,
        window_readers=list(row.window_readers) if row.window_readers is not None else None,
    )


def row_columns() -> tuple[Any, ...]:
    return (
        Note.id,
        Note.turn_seq,
        Note.tenant_id,
        Note.user_id,
        Note.status,
        Note.visibility,
        Note.domain,
        Note.agent_id,
        Note.index_text,
        Note.content,
        Note.speaker,
        Note.occurred_at,
        Note.window_text,
        Note.window_readers,
        binary_vector(Note.embedding, "embedding"),
        binary_vector(Note.window_embedding, "window_embedding"),
    )


def session_rows(
    session: Session, key: SessionKey, seeds: frozenset[int], turns_each_side: int
) -> list[WindowRow]:
    """The eligible notes from 2 * `turns_each_side` distinct turns before the first seed to
    as many after the last: every turn a refreshed window reads."""
    tenant_id, user_id, session_id = key
    rows = _session_rows_statement(turns_each_side).rows(
        session,
        {
            "window_tenant_id": tenant_id,
            "window_user_id": user_id,
            "window_session_id": session_id,
            "first_seed": min(seeds),
            "last_seed": max(seeds),
        },
    )
    return [parse_row(row) for row in rows]


@cache
def _session_rows_statement(turns_each_side: int) -> CompiledStatement:
    reach = 2 * turns_each_side
    scope = _eligible()
    first = bindparam("first_seed", type_=Integer)
    last = bindparam("last_seed", type_=Integer)
    before = (
        select(Note.turn_seq)
        .where(scope, Note.turn_seq < first)
        .distinct()
        .order_by(Note.turn_seq.desc())
        .limit(reach)
        .subquery()
    )
    after = (
        select(Note.turn_seq)
        .where(scope, Note.turn_seq > last)
        .distinct()
        .order_by(Note.turn_seq)
        .limit(reach)
        .subquery()
    )
    low = func.coalesce(select(func.min(before.c.turn_seq)).scalar_subquery(), first)
    high = func.coalesce(select(func.max(after.c.turn_seq)).scalar_subquery(), last)
    return CompiledStatement(
        select(*row_columns())
        .where(scope, Note.turn_seq.between(low, high))
        .order_by(Note.turn_seq, Note.id)
    )
