"""The candidates' rows (for scoring) and vectors (for MMR), read by primary key.

Invariants: only the ids given are read, and they come from routes that applied the
access rules; vectors come from the viewer's partition of `note_vectors`, so another
user's note never yields one.

(Reading every candidate's row and vector aside, while fusion and neighbour smoothing
ran, was measured and dropped: 1.4 ms slower on average in process, the second
transaction's row parsing contending with this thread's work; benchmarks/README.md.)
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import cache
from typing import Protocol

import numpy as np
from sqlalchemy import String, bindparam, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.db import CompiledStatement
from memory.notes.models import Note, NoteVector
from memory.notes.vectors import binary_vector, parse_vector
from memory.types import id_in_param


class ScoredNote(Protocol):
    """What scoring and the callers read of a candidate: `CANDIDATE_COLUMNS`."""

    id: uuid.UUID
    content: str
    kind: str
    domain: str
    visibility: str
    speaker: str | None
    agent_id: str
    occurred_at: datetime
    access_times: list[datetime] | None
    access_count: int
    first_access_at: datetime
    half_life_hours: float
    term_count: int


# Plain rows rather than ORM objects (150 candidates: 3.9 against 8.2 ms of CPU); no index
# columns, and vectors only for the MMR pool.
CANDIDATE_COLUMNS = tuple(getattr(Note, name) for name in ScoredNote.__annotations__)

Vectors = dict[uuid.UUID, np.ndarray]


def load_candidates(session: Session, note_ids: list[uuid.UUID]) -> dict[uuid.UUID, ScoredNote]:
    if not note_ids:
        return {}
    rows = _candidates_statement().rows(session, {"ids": note_ids})
    return {row.id: row for row in rows}


@cache
def _candidates_statement() -> CompiledStatement:
    return CompiledStatement(select(*CANDIDATE_COLUMNS).where(id_in_param(Note.id, "ids")))


def pool_vectors(session: Session, viewer: Viewer, note_ids: list[uuid.UUID]) -> Vectors:
    """The notes' vectors, read from the viewer's partition of note_vectors, where they are
    stored inline (every hit is searchable, so mirrored there); in notes they are
    TOASTed, two more page reads per vector. A note without a vector has none here."""
    if not note_ids:
        return {}
    params = {"tenant_id": viewer.tenant_id, "user_id": viewer.user_id, "ids": note_ids}
    rows = _pool_vectors_statement().rows(session, params)
    return {row.note_id: parse_vector(row.embedding) for row in rows}  # type: ignore[misc]


@cache
def _pool_vectors_statement() -> CompiledStatement:
    return CompiledStatement(
        select(NoteVector.note_id, binary_vector(NoteVector.embedding, "embedding")).where(
            NoteVector.tenant_id == bindparam("tenant_id", type_=String),
            NoteVector.user_id == bindparam("user_id", type_=String),
            id_in_param(NoteVector.note_id, "ids"),
        )
    )
