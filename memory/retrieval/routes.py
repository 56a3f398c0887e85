"""Candidate routes of the read path. Every route filters by the access rules inside SQL.

Invariants: each route returns {note_id: score} on its own scale (higher is better) for
at most `limit` notes the viewer may see, that are current (valid_to IS NULL), not
expired, and active (or archived when asked for); no route reads a whole history into
Python: candidates come from indexes (HNSW on the viewer's partition of note_vectors,
GIN on tsvector, trigram). Each statement is compiled once per scope shape
(`memory.retrieval.scope`) and run with the scope's values (`memory.db.CompiledStatement`).
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from functools import cache
from typing import Any, TypeAlias

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    bindparam,
    case,
    literal_column,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql.selectable import Select, Subquery

from memory.access.policy import Viewer
from memory.db import CompiledStatement, graph_scan_cap
from memory.links.models import Link
from memory.notes.models import EMBEDDING_DIMENSION, Note, NoteVector, NoteWindowVector
from memory.notes.vectors import VectorParam
from memory.retrieval.scope import (
    KIND_PARAMS,
    ReadScope,
    ScopeShape,
    SearchFilters,
    filter_conditions,
    scope_conditions,
    shape_cached,
    unexpired,
    window_usable,
)
from memory.types import id_in_param

__all__ = ["ReadScope", "SearchFilters"]

# The query vector as the statements take it: pgvector's binary form (`VectorParam`, what
# the read path sends) or its text form (`vector_text`); the parameter is sent untyped, and
# PostgreSQL reads either as a vector, the other operand of `<=>`.
QueryVectorParam: TypeAlias = VectorParam | str
# The dense route's first look: this many times its limit of the partition's nearest
# vectors (the access rules drop ~15 % of a typical agent's candidates).
DENSE_POOL_FACTOR = 2
# The exact fallback of a filtered dense search keeps this many times its limit.
SLICE_POOL_FACTOR = 4
# The link kinds one hop of spreading activation follows.
SPREADING_LINK_KINDS = ("related", "consolidates", "derived_from")


def dense_route(
    session: Session,
    scope: ReadScope,
    vector: QueryVectorParam,
    *,
    limit: int,
    scan_tuples: int | None = None,
) -> dict[uuid.UUID, float]:
    """Nearest notes by cosine to `vector` (`QueryVectorParam`), searched in `note_vectors`
    (the searchable notes' vectors).

    The viewer's tenant and user as parameters on note_vectors prune the search to their
    partition (one HNSW graph, or an exact scan of inline vectors for a small user).
    First the partition alone gives its nearest `limit * DENSE_POOL_FACTOR` vectors that
    pass the search filters and have not expired (the mirror carries kind, domain,
    occurred_at and expires_at, so the graph's iterative scan rejects an entry without a
    join), and only those are joined to
    notes for the access rules, in a form the planner does not answer with the user's
    scope index. Joined in one statement, the planner sorted every vector of a 10k-note
    user and hash-joined all its notes (13 ms against 0.8 ms for the bare graph). When
    fewer than `limit` of the pool pass, a filtered search ranks its slice exactly
    (`_dense_slice_statement`): the graph's scan gave up far from the slice. An unfiltered
    one, short because of the access rules, runs the one-statement search with iterative
    index scans instead. Either way the route fills its limit when the slice holds enough
    notes the viewer may see. `scan_tuples` caps a filtered search's graph scan
    (`graph_scan_cap`): a slice the graph has not reached by then is ranked exactly.
    """
    params = {**scope.params, "query_vector": vector, "pool_size": limit * DENSE_POOL_FACTOR}
    cap = scan_tuples if scope.filters.narrows else None
    with graph_scan_cap(session, cap) if cap is not None else nullcontext():
        rows = _dense_pool_statement(scope.shape, limit).rows(session, params)
    if len(rows) < limit:
        fallback = _dense_slice_statement if scope.filters.narrows else _dense_statement
        rows = fallback(scope.shape, limit).rows(session, params)
    return {row.id: 1.0 - float(row.d) for row in rows}


def _vector_scope(shape: ScopeShape) -> list[ColumnElement[bool]]:
    scope = [
        NoteVector.tenant_id == bindparam("viewer_tenant_id", type_=String),
        NoteVector.user_id == bindparam("viewer_user_id", type_=String),
    ]
    if not shape.include_archived:
        scope.append(NoteVector.active)
    # Expired but not yet swept: rejected in the graph scan, not after the join (0010).
    scope.append(unexpired(NoteVector))
    # The filters on the mirror's own columns: the graph scan rejects an entry there,
    # before any join (0006).
    return scope + filter_conditions(shape, NoteVector)


def _query_distance(column: Any) -> ColumnElement[float]:
    """Cosine distance to the query vector (`QueryVectorParam`)."""
    # Typed as the vector itself, not as a string: the psycopg dialect casts a string
    # parameter to VARCHAR, which a binary value is not.
    return column.cosine_distance(bindparam("query_vector", type_=Vector(EMBEDDING_DIMENSION)))


@shape_cached
def _dense_pool_statement(shape: ScopeShape, limit: int) -> CompiledStatement:
    return _nearest_then_joined(shape, limit, exact=False)


@shape_cached
def _dense_slice_statement(shape: ScopeShape, limit: int) -> CompiledStatement:
    """The filtered slice's nearest vectors ranked exactly, then joined for the access rules.

    `+ 0` keeps the graph out of it (the graph scan has just come up short): a scan of
    the slice with a bounded top-N sort of (id, distance) pairs in memory. Joined first,
    the planner sorted whole 1.5 kB rows through a disk sort (114 against 55 ms in
    EXPLAIN ANALYZE for a 23,000-note slice of a 100k-note user). The sort keeps
    `limit * SLICE_POOL_FACTOR` pairs, so up to three in four may fail the access rules
    before the answer runs short.
    """
    return _nearest_then_joined(shape, limit, exact=True)


def _nearest_then_joined(shape: ScopeShape, limit: int, *, exact: bool) -> CompiledStatement:
    """The partition's nearest vectors (the graph's, or exact ones), then the `limit`
    best of them that pass the access rules on notes."""
    distance = _query_distance(NoteVector.embedding)
    if exact:
        distance = distance + 0.0
    pool = limit * SLICE_POOL_FACTOR if exact else bindparam("pool_size", type_=Integer)
    if shape.kinds and not exact:
        nearest = _nearest_per_kind(shape, distance, pool)
    else:
        nearest = _nearest(_vector_scope(shape), distance, pool).subquery("nearest")
    return CompiledStatement(
        select(Note.id, nearest.c.d)
        .join(Note, Note.id == nearest.c.note_id)
        .where(scope_conditions(shape, scope_by_index=False))
        .order_by(nearest.c.d)
        .limit(limit)
    )


def _nearest_per_kind(shape: ScopeShape, distance: Any, pool: Any) -> Subquery:
    """The pool of a kinds filter: each kind's own nearest `pool`, merged.

    A kind's slice with a graph of its own (`memory.notes.graphs`) answers from it: the
    custom plan sees `kind = 'decision'`, which implies the graph's predicate. One scan
    of the user's graph for all the kinds walks past the others' entries (a 100k user's
    two kinds: 8.9 ms against 2.7, commit ef5fc18). A branch past the
    caller's kinds compares with NULL, and the planner drops it.
    """
    others = _vector_scope(shape._replace(kinds=False))
    branches = [
        _nearest([*others, NoteVector.kind == bindparam(name, type_=String)], distance, pool)
        for name in KIND_PARAMS
    ]
    merged = union_all(*branches).subquery("per_kind")
    return select(merged.c.note_id, merged.c.d).order_by(merged.c.d).limit(pool).subquery("nearest")


def _nearest(conditions: list[ColumnElement[bool]], distance: Any, pool: Any) -> Select[Any]:
    """The `pool` nearest mirror rows that meet `conditions`: (note_id, d)."""
    return (
        select(NoteVector.note_id, distance.label("d"))
        .where(*conditions)
        .order_by(distance)
        .limit(pool)
    )


@shape_cached
def _dense_statement(shape: ScopeShape, limit: int) -> CompiledStatement:
    distance = _query_distance(NoteVector.embedding)
    return CompiledStatement(
        select(Note.id, distance.label("d"))
        .select_from(NoteVector)
        .join(Note, Note.id == NoteVector.note_id)
        .where(*_vector_scope(shape), scope_conditions(shape))
        .order_by(distance)
        .limit(limit)
    )


def window_similarity(
    session: Session, viewer: Viewer, note_ids: list[uuid.UUID], vector: QueryVectorParam
) -> dict[uuid.UUID, float]:
    """Cosine of the query (`QueryVectorParam`) with the window vectors of `note_ids`, which
    must come from routes that applied the access rules; read from the viewer's partition
    of `note_window_vectors` (inline rows, by primary key), so a note of another user is
    never scored."""
    if not note_ids:
        return {}
    params = {
        "tenant_id": viewer.tenant_id,
        "user_id": viewer.user_id,
        "viewer_agent_id": viewer.agent_id,
        "ids": note_ids,
        "query_vector": vector,
    }
    rows = _window_statement(gated=not viewer.user_level).rows(session, params)
    return {row.note_id: float(row.s) for row in rows}


@cache
def _window_statement(*, gated: bool) -> CompiledStatement:
    """`gated`: an agent viewer scores only the windows it may rank by (`window_usable`)."""
    similarity = 1.0 - _query_distance(NoteWindowVector.window_embedding)
    conditions = [
        NoteWindowVector.tenant_id == bindparam("tenant_id", type_=String),
        NoteWindowVector.user_id == bindparam("user_id", type_=String),
        id_in_param(NoteWindowVector.note_id, "ids"),
    ]
    if gated:
        conditions.append(window_usable(NoteWindowVector.window_readers))
    return CompiledStatement(
        select(NoteWindowVector.note_id, similarity.label("s")).where(*conditions)
    )


def verbatim_route(
    session: Session, scope: ReadScope, tokens: list[str], *, limit: int
) -> dict[uuid.UUID, float]:
    """Notes containing an id-like token verbatim (trigram index); score = tokens matched."""
    usable = [t for t in dict.fromkeys(tokens) if len(t) >= 3][:5]
    if not usable:
        return {}
    patterns = {f"pattern_{i}": "%" + _escape_like(t) + "%" for i, t in enumerate(usable)}
    statement = _verbatim_statement(scope.shape, len(usable), limit)
    rows = statement.rows(session, {**scope.params, **patterns})
    return {row.id: float(row.matched) for row in rows}


@shape_cached
def _verbatim_statement(shape: ScopeShape, count: int, limit: int) -> CompiledStatement:
    likes = [
        Note.content.ilike(bindparam(f"pattern_{i}", type_=String), escape="\\")
        for i in range(count)
    ]
    hits = [case((like, 1.0), else_=0.0) for like in likes]
    matched = sum(hits[1:], hits[0]).label("matched")
    return CompiledStatement(
        select(Note.id, matched)
        .where(scope_conditions(shape), or_(*likes))
        .order_by(matched.desc())
        .limit(limit)
    )


def _escape_like(token: str) -> str:
    return token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def linked_route(
    session: Session, scope: ReadScope, seeds: dict[uuid.UUID, float], *, limit: int
) -> dict[uuid.UUID, tuple[float, uuid.UUID]]:
    """One hop from strong candidates: {target: (seed relevance * link weight, seed)}."""
    if not seeds:
        return {}
    rows = _linked_statement(scope.shape, limit).rows(session, {**scope.params, "ids": list(seeds)})
    spread: dict[uuid.UUID, tuple[float, uuid.UUID]] = {}
    for source_id, target_id, weight in rows:
        value = seeds[source_id] * float(weight)
        if value > spread.get(target_id, (0.0, source_id))[0]:
            spread[target_id] = (value, source_id)
    return dict(sorted(spread.items(), key=lambda kv: -kv[1][0])[:limit])


@shape_cached
def _linked_statement(shape: ScopeShape, limit: int) -> CompiledStatement:
    kinds = [literal_column(f"'{kind}'", String) for kind in SPREADING_LINK_KINDS]
    return CompiledStatement(
        select(Link.source_id, Link.target_id, Link.weight)
        .join(Note, Note.id == Link.target_id)
        .where(id_in_param(Link.source_id, "ids"), Link.kind.in_(kinds), scope_conditions(shape))
        .limit(limit * 4)
    )
