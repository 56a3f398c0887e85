"""The candidates' rows (for scoring) with their seeds' adjacent turns, and vectors (for
MMR), read by primary key.

Invariants: only the ids given are read, and they come from routes that applied the
access rules; an adjacent turn is one the viewer may see (the access rules and filters
apply to it in SQL); vectors come from the viewer's partition of `note_vectors`, so
another user's note never yields one.

(Reading every candidate's row and vector aside, while fusion and neighbour smoothing
ran, was measured and dropped: 1.4 ms slower on average in process, the second
transaction's row parsing contending with this thread's work; commit b443180.)
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import cache
from typing import Any, Protocol

import numpy as np
from pgvector.sqlalchemy import SPARSEVEC
from sqlalchemy import String, bindparam, func, select, true
from sqlalchemy.orm import Session, aliased

from memory.access.policy import Viewer
from memory.activation.base_level_sql import base_level_column, base_level_params
from memory.db import CompiledStatement
from memory.notes.models import Note, NoteVector
from memory.notes.vectors import binary_vector, parse_vector
from memory.retrieval.scope import ReadScope, ScopeShape, scope_conditions, shape_cached
from memory.types import SPARSE_DIMENSION, id_in_param


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
    last_access_at: datetime
    first_access_at: datetime
    half_life_hours: float
    term_count: int
    # Provenance (memory.trust): shown with every hit, used by the context block.
    origin: str
    origin_ref: str | None
    trust: str
    instruction_like: bool
    review: str | None
    base_level: float  # ACT-R's B at the search's clock, computed by PostgreSQL
    # The query's sparse inner products (`memory.retrieval.sparse`): the note's own, and
    # its own plus its adjacent turns' for a seed (a window read at query time); None
    # without either vector.
    sparse_own: float | None
    sparse_window: float | None


COMPUTED = ("base_level", "sparse_own", "sparse_window")
# Plain rows rather than ORM objects (150 candidates: 3.9 against 8.2 ms of CPU); no index
# columns, vectors only for the MMR pool, and B instead of the accesses it is made of.
CANDIDATE_COLUMNS = (
    *(getattr(Note, name) for name in ScoredNote.__annotations__ if name not in COMPUTED),
    base_level_column(Note).label("base_level"),
)

Vectors = dict[uuid.UUID, np.ndarray]


Adjacent = dict[uuid.UUID, list[uuid.UUID]]


def load_candidates(
    session: Session,
    scope: ReadScope,
    note_ids: list[uuid.UUID],
    seed_ids: list[uuid.UUID] | None = None,
    *,
    now: datetime,
    decay: float,
    sparse_query: str | None = None,
) -> tuple[dict[uuid.UUID, ScoredNote], Adjacent]:
    """The rows of `note_ids` with their base levels at `now` (ACT-R decay `decay`), and
    for each of `seed_ids` (a subset) the visible notes of the previous and the next turn
    of its session (the nearest turn_seq on either side). With `sparse_query` (pgvector's
    sparsevec text form) each row carries its inner products with it (`ScoredNote`).

    One statement: the seeds' adjacent turns used to be a statement of their own, which
    looked each seed up by primary key again (4.1 ms of a 100k search's serial stretch,
    commit 7fdbb18)."""
    if not note_ids:
        return {}, {}
    params = {
        **scope.params,
        **base_level_params(now, decay),
        "ids": note_ids,
        "seed_ids": seed_ids or [],
        "sparse_query": sparse_query,
    }
    rows = _candidates_statement(scope.shape).rows(session, params)
    adjacent: Adjacent = {}
    for row in rows:
        found = [i for i in (row.before_id, row.after_id) if i is not None]
        if found:
            adjacent[row.id] = found
    return {row.id: row for row in rows}, adjacent


@shape_cached
def _candidates_statement(shape: ScopeShape) -> CompiledStatement:
    before, after = _adjacent_turn(shape, before=True), _adjacent_turn(shape, before=False)
    own = _sparse_dot(Note)
    window = own + func.coalesce(before.c.sparse, 0.0) + func.coalesce(after.c.sparse, 0.0)
    return CompiledStatement(
        select(
            *CANDIDATE_COLUMNS,
            own.label("sparse_own"),
            window.label("sparse_window"),
            before.c.id.label("before_id"),
            after.c.id.label("after_id"),
        )
        .select_from(Note)
        .outerjoin(before, true())
        .outerjoin(after, true())
        .where(id_in_param(Note.id, "ids"))
    )


def _sparse_dot(note: Any) -> Any:
    """The note's sparse vector's inner product with the query's (NULL without either);
    pgvector's `<#>` is its negative."""
    # Typed as sparsevec, not cast from a string: the text form (or NULL) is read through
    # the operator, and the statement stays short enough for psycopg to cache its parse.
    query = bindparam("sparse_query", type_=SPARSEVEC(SPARSE_DIMENSION))
    return -note.sparse_embedding.max_inner_product(query)


def _adjacent_turn(shape: ScopeShape, *, before: bool) -> Any:
    """The visible note of the nearest turn before (after) the candidate's in its session,
    its id and its sparse inner product, for seeds only: for any other candidate the
    condition on `seed_ids` fails before the index is read (PostgreSQL tests it once per
    row, as a one-time filter)."""
    name = "before" if before else "after"
    # Short aliases: each is named twenty times, and the statement must stay within the
    # length psycopg caches its parse for (tests/unit/retrieval/test_candidates_statement).
    neighbour = aliased(Note, name="prior" if before else "later")
    nearer = neighbour.turn_seq < Note.turn_seq if before else neighbour.turn_seq > Note.turn_seq
    order = neighbour.turn_seq.desc() if before else neighbour.turn_seq
    return (
        select(neighbour.id.label("id"), _sparse_dot(neighbour).label("sparse"))
        .where(
            id_in_param(Note.id, "seed_ids"),
            scope_conditions(shape, neighbour),
            neighbour.session_id == Note.session_id,
            nearer,
        )
        .order_by(order)
        .limit(1)
        .lateral(name)
    )


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
