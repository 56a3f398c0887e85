"""A user's slice graphs walked into PostgreSQL's buffers ahead of its filtered searches.

Why: reading a user's files ahead (`memory.retrieval.readahead`) puts them in the OS page
cache, not in PostgreSQL's buffers, and a graph walk asks for its pages one at a time. A
slice's graph (`memory.notes.graphs`) is walked only by searches filtered to that slice,
so its pages stay cold long after the user's graph is warm. On the latency benchmark, a
100k user's first searches filtered to one domain after a restart took 80, 42, 18 ms in
the dense route with nothing read ahead, 27, 12, 11 with the files and rows read ahead,
and 7, 4, 4 (as warm) after one full scan of each slice's graph; over HTTP, filtered
searches in the first third of the run took 40-43 ms at the median against 27-34 later,
and held all their p95 misses (the latency runs of commit 07a8587). One scan with
pgvector's iterative scan and no tuple cap visits every entry the graph reaches: 0.9 s
for a 100k user's nine slices (129,016 entries) with their files in the page cache.

The user's whole graph is not walked: every unfiltered search walks it, so traffic warms
it within a few searches, and a full scan of a 100k user's graph would hold a core for
a second or two while those searches come in.

Invariants: it only reads (one SELECT per graph, in a transaction bound to the user by
row-level security, so no other user's row is visited); only the user's own slices'
graphs are walked, each whole or not at all, their sizes adding up to at most
`max_bytes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from sqlalchemy import TextClause, text
from sqlalchemy.orm import Session

from memory.db import scope_session
from memory.notes.graphs import SLICE_COLUMNS, slice_graph_name

# pgvector stops an iterative scan at `hnsw.max_scan_tuples` or when its candidates
# outgrow `work_mem` x `hnsw.scan_mem_multiplier`; a walk lifts both for its transaction.
WALK_WORK_MEM = "256MB"
WALK_MAX_TUPLES = 100_000_000
# A walk is read through a server-side cursor, WALK_CHUNK entries at a time, resting
# after each chunk for WALK_REST times as long as it took: at most half a core, so the
# searches that arrive meanwhile (a user's first ones, the API's first after a start)
# still find a core free. The rest was not measured apart: on the read-ahead's thread,
# walks with or without it held back the next users' files and rows, and a cold start's
# 100k search p95 went from 56.7 to 78.2 (unrested) and 87.6 ms (rested); on a thread of
# their own (`memory.retrieval.warm`), rested, 57.8 (commits 80ce672 and 07a8587).
# Until c0ef135 the chunks were not chunks (see `_walk_resting`): each scan was
# fetched whole, then rested. The warmer now also waits for a moment without searches
# before each chunk (`memory.retrieval.foreground`).
WALK_CHUNK = 1000
WALK_REST = 1.0


class SliceGraph(NamedTuple):
    name: str
    size: int  # bytes of the index
    column: str  # one of SLICE_COLUMNS
    value: str


class GraphsWalked(NamedTuple):
    graphs: int
    entries: int  # the rows the walks returned, each an entry of a graph
    bytes: int  # the graphs' sizes


_SLICE_VALUES = {
    column: text(
        f"SELECT DISTINCT {column} FROM note_vectors"
        " WHERE tenant_id = :tenant_id AND user_id = :user_id"
    )
    for column in SLICE_COLUMNS
}
_VALID_GRAPHS = text(
    "SELECT c.relname AS name, pg_relation_size(c.oid) AS size FROM pg_class c"
    " JOIN pg_index i ON i.indexrelid = c.oid"
    " WHERE c.relname = ANY(:names) AND c.relkind = 'i' AND i.indisvalid"
)
_ANY_VECTOR = text(
    "SELECT embedding::text FROM note_vectors"
    " WHERE tenant_id = :tenant_id AND user_id = :user_id LIMIT 1"
)
# Only the graph can answer an ORDER BY distance without a sort; the read path's custom
# plans see the slice's value, which implies the partial graph's predicate.
_WALK_SETTINGS = text(
    "SELECT "
    + ", ".join(
        f"set_config('{name}', '{value}', true)"
        for name, value in (
            ("enable_seqscan", "off"),
            ("enable_bitmapscan", "off"),
            ("enable_sort", "off"),
            ("plan_cache_mode", "force_custom_plan"),
            ("hnsw.iterative_scan", "relaxed_order"),
            ("hnsw.max_scan_tuples", str(WALK_MAX_TUPLES)),
            ("work_mem", WALK_WORK_MEM),
        )
    )
)
_WALK = (
    "SELECT 1 AS entry FROM note_vectors"
    " WHERE tenant_id = :tenant_id AND user_id = :user_id AND {column} = :value"
    f" ORDER BY embedding <=> CAST(:vector AS vector) LIMIT {WALK_MAX_TUPLES}"
)


def list_slice_graphs(*, session: Session, tenant_id: str, user_id: str) -> list[SliceGraph]:
    """The valid graphs of the user's slices, by name (none of another user's: the names
    are the user's, `memory.notes.graphs`)."""
    who = {"tenant_id": tenant_id, "user_id": user_id}
    wanted: dict[str, tuple[str, str]] = {}
    for column, statement in _SLICE_VALUES.items():
        for value in session.execute(statement, who).scalars():
            if value is not None:
                wanted[slice_graph_name(tenant_id, user_id, column, value)] = (column, value)
    if not wanted:
        return []
    rows = session.execute(_VALID_GRAPHS, {"names": list(wanted)})
    graphs = [SliceGraph(row.name, int(row.size), *wanted[row.name]) for row in rows]
    return sorted(graphs, key=lambda g: g.name)


def walk_slice_graphs(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    max_bytes: int,
    wait_quiet: Callable[[], object] = lambda: None,
    chunk: int = WALK_CHUNK,
) -> GraphsWalked:
    """One full scan of each of the user's slices' graphs, in `list_slice_graphs`' order,
    those that fit in what remains of `max_bytes`, so their pages are in PostgreSQL's
    buffers; `wait_quiet` is called before each `chunk` of a scan is fetched (the
    warmer's wait for a moment without searches, `memory.retrieval.foreground`)."""
    chosen, total = [], 0
    for graph in list_slice_graphs(session=session, tenant_id=tenant_id, user_id=user_id):
        if total + graph.size <= max_bytes:
            chosen.append(graph)
            total += graph.size
    who = {"tenant_id": tenant_id, "user_id": user_id}
    vector = session.execute(_ANY_VECTOR, who).scalar() if chosen else None
    if vector is None:
        return GraphsWalked(0, 0, 0)
    scope_session(session, tenant_id=tenant_id, user_id=user_id)
    session.execute(_WALK_SETTINGS)
    entries = 0
    for graph in chosen:
        params = {**who, "vector": vector, "value": graph.value}
        statement = walk_statement(graph.column)
        entries += _walk_resting(session, statement, params, wait_quiet, chunk)
    return GraphsWalked(len(chosen), entries, total)


def _walk_resting(
    session: Session,
    walk: TextClause,
    params: dict[str, object],
    wait_quiet: Callable[[], object],
    chunk: int,
) -> int:
    """The walk's entries, fetched `chunk` at a time, each fetch after `wait_quiet` and
    followed by a rest as long as it took."""
    entries = 0
    streamed = session.execute(walk, params, execution_options={"yield_per": chunk})
    # The size, not only yield_per: without it partitions() fetched the whole scan at
    # once (a text statement's result), so the walk never rested between chunks.
    fetches = streamed.partitions(chunk)
    while True:
        wait_quiet()
        started = time.perf_counter()
        rows = next(fetches, None)
        if rows is None:
            return entries
        entries += len(rows)
        time.sleep((time.perf_counter() - started) * WALK_REST)


def walk_statement(column: str) -> TextClause:
    """The full scan of a slice's graph: parameters tenant_id, user_id, value (the slice's
    `column` value) and vector (any, as text: the scan reaches every entry anyway)."""
    if column not in SLICE_COLUMNS:  # a column name goes into the SQL, so only these
        raise ValueError(f"not a slice column: {column!r}")
    return text(_WALK.format(column=column))
