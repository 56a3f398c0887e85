"""In-process diagnosis for the latency benchmark: where a search spends its time.

Runs `search_notes` against the benchmark database with the read path's pieces wrapped
by timers (monkeypatched in this process only), captures the SQL one search sends, and
re-runs each statement under EXPLAIN (ANALYZE, BUFFERS) with the same parameters.
Also the floor: a bare pgvector HNSW query on the user's partition of note_vectors.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from sqlalchemy import event

from benchmarks.common import summarise
from memory.access.policy import agent_viewer
from memory.clients.embedder import embed_query
from memory.clients.sparse_encoder import encode_sparse_query
from memory.config import get_settings
from memory.db import get_engine, session_scope
from memory.notes.service import readable_note_sources
from memory.retrieval import bm25 as b
from memory.retrieval import routes as r
from memory.retrieval import service
from memory.retrieval.context import CONTEXT_POOL_SIZE, build_context
from memory.retrieval.scope import SearchFilters
from memory.retrieval.service import SearchOptions, search_notes

FLOOR_SQL = (
    "SELECT note_id FROM note_vectors WHERE tenant_id = %s AND user_id = %s"
    " ORDER BY embedding <=> %s LIMIT 10"
)
PIECES: tuple[tuple[Any, str], ...] = (
    (r, "dense_route"),
    (r, "window_similarity"),
    (b, "load_query_terms"),
    (b, "bm25_route"),
    (r, "verbatim_route"),
    (r, "linked_route"),
    # Patched where the read path looks them up (service imports them by name).
    (service, "load_candidates"),
    (service, "pool_vectors"),
    (service, "_score"),
    (service, "_select"),
    (service, "_smooth_by_neighbours"),
    (service, "_add_sparse_channel"),
)


@contextmanager
def timed_pieces(sink: dict[str, float]) -> Iterator[None]:
    """Wrap the read path's pieces; each call adds its ms to sink[name] (window apart)."""
    originals = {
        (module, name): getattr(module, name) for module, name in PIECES if hasattr(module, name)
    }

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = name.strip("_") + ("_window" if kwargs.get("window") else "")
                sink[key] = sink.get(key, 0.0) + (time.perf_counter() - started) * 1000

        return timed

    for (module, name), fn in originals.items():
        setattr(module, name, wrap(name, fn))
    try:
        yield
    finally:
        for (module, name), fn in originals.items():
            setattr(module, name, fn)


def search_filters(body: dict[str, Any]) -> SearchFilters:
    """The read path's filters of a /v1/search body (kinds, domains, since)."""
    return SearchFilters(
        kinds=tuple(body.get("kinds", ())),
        domains=tuple(body.get("domains", ())),
        since=datetime.fromisoformat(body["since"]) if "since" in body else None,
    )


def _one_search(
    user_id: str,
    query: str,
    sink: dict[str, float],
    filters: SearchFilters | None = None,
    *,
    context: bool = False,
) -> int:
    """One search's pieces into `sink`; `context`: shaped as /v1/context's (its pool of
    `CONTEXT_POOL_SIZE`, no length prior, the small-talk gate) and its block built at the
    API's default 1,000 tokens, without the API's time budget (every step runs)."""
    settings = get_settings()
    top_k = CONTEXT_POOL_SIZE if context else 10
    options = SearchOptions(length_prior=0.0, skip_filler=True) if context else None
    started = time.perf_counter()
    vector = embed_query(query, settings)
    sink["embed"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    sparse = encode_sparse_query(query, settings)
    sink["sparse_encode"] = (time.perf_counter() - started) * 1000
    with session_scope(custom_plans=True) as session:
        viewer = agent_viewer(
            session=session, settings=settings, tenant_id="bench", user_id=user_id, agent_id="main"
        )
        started = time.perf_counter()
        with timed_pieces(sink):
            hits = search_notes(
                session=session,
                viewer=viewer,
                query=query,
                vector=vector,
                top_k=top_k,
                settings=settings,
                filters=filters,
                options=options,
                sparse=sparse,
            )
        sink["search_notes"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        readable_note_sources(session=session, note_ids=[h.note.id for h in hits])
        sink["note_sources"] = (time.perf_counter() - started) * 1000
    if context:
        started = time.perf_counter()
        build_context(hits, 1000)
        sink["build_context"] = (time.perf_counter() - started) * 1000
    return len(hits)


def profile_pieces(
    work: list[tuple[str, str]],
    filters: dict[str, SearchFilters] | None = None,
    *,
    context: bool = False,
) -> dict[str, dict[str, float]]:
    """Per-piece ms summaries over (user_id, query) pairs, in process; `filters` by user;
    `context`: the searches shaped as /v1/context's (`_one_search`)."""
    samples: dict[str, list[float]] = defaultdict(list)
    for user_id, query in work:
        sink: dict[str, float] = {}
        _one_search(user_id, query, sink, (filters or {}).get(user_id), context=context)
        for key, value in sink.items():
            samples[key].append(value)
    return {key: summarise(values) for key, values in samples.items()}


def clean_plan(plan: str) -> str:
    """A plan without its 384-float vector literals and long uuid lists."""
    plan = re.sub(r"'\[[-0-9.e,]+\]'::vector", "'[query vector]'::vector", plan)
    return re.sub(
        r"'\{[0-9a-f,-]{200,}\}'::uuid\[\]",
        lambda m: f"'{{{m.group(0).count(',') + 1} ids}}'::uuid[]",
        plan,
    )


def _label(statement: str) -> str:
    checks = (
        ("window_embedding <=>", "dense_window"),
        ("note_vectors.embedding <=>", "dense"),
        ("lexicon_totals", "lexicon_totals"),
        ("FROM lexicon", "lexicon_terms"),
        ("setweight(notes.window_terms", "bm25_window"),
        ("setweight(notes.index_terms", "bm25"),
        ("ILIKE", "verbatim"),
        ("FROM links", "links"),
        ("note_sources", "sources"),
        ("FROM agents", "agent"),
        ("notes.id = ANY", "load_notes"),
    )
    return next((label for needle, label in checks if needle in statement), "other")


def explain_search(user_id: str, query: str) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement one search sends, by route."""
    captured: list[tuple[str, Any]] = []
    engine = get_engine(custom_plans=True)

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        captured.append((statement, params))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        _one_search(user_id, query, {})
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    plans: dict[str, str] = {}
    with session_scope(custom_plans=True) as session:
        raw = session.connection().connection.dbapi_connection
        assert raw is not None
        with raw.cursor() as cursor:
            for statement, params in captured:
                if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, SERIALIZE) " + statement, params)
                label = _label(statement)
                text = clean_plan("\n".join(row[0] for row in cursor.fetchall()))
                plans[label if label not in plans else f"{label}_2"] = text
    return plans


def floor(url: str, work: list[tuple[str, np.ndarray]]) -> dict[str, Any]:
    """Bare HNSW top 10 per (user_id, vector) in the user's partition of note_vectors,
    iterative scans on like the app's pool."""
    times: list[float] = []
    counts: list[int] = []
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for user_id, vector in work:
            started = time.perf_counter()
            rows = conn.execute(FLOOR_SQL, ("bench", user_id, vector)).fetchall()
            times.append((time.perf_counter() - started) * 1000)
            counts.append(len(rows))
        user_id, vector = work[0]
        plan = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + FLOOR_SQL, ("bench", user_id, vector)
        ).fetchall()
    return {
        "ms": summarise(times),
        "full": sum(c == 10 for c in counts),
        "n": len(counts),
        "raw_ms": times,
        "explain": clean_plan("\n".join(row[0] for row in plan)),
    }


def db_facts(url: str) -> dict[str, Any]:
    """Sizes of the notes table and its indexes, of note_vectors (all partitions, graphs
    included), and the settings that matter for reads."""
    with psycopg.connect(url) as conn:
        sizes = conn.execute(
            "SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relname = 'notes' OR c.oid IN (SELECT indexrelid FROM pg_index "
            "WHERE indrelid = 'notes'::regclass) ORDER BY pg_total_relation_size(c.oid) DESC"
        ).fetchall()
        sizes += conn.execute(
            "SELECT 'note_vectors', pg_size_pretty(sum(pg_total_relation_size(relid)))"
            " FROM pg_partition_tree('note_vectors') WHERE isleaf"
        ).fetchall()
        names = (
            "server_version",
            "shared_buffers",
            "work_mem",
            "effective_cache_size",
            "random_page_cost",
            "hnsw.ef_search",
            "hnsw.max_scan_tuples",
            "jit",
        )
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        settings = {n: conn.execute(f"SHOW {n}").fetchone()[0] for n in names}  # type: ignore[index]
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        settings["pgvector"] = version.fetchone()[0]  # type: ignore[index]
    return {"sizes": dict(sizes), "settings": settings}


def recheck_short_filtered(samples: list[Any]) -> None:
    """Run each filtered search that returned fewer than top_k again in process with the
    ACT-R retrieval threshold off (`activation=False`), and note whether it is full."""
    settings = get_settings()
    for sample in samples:
        if not sample.kind.startswith("filter") or sample.count >= 10:
            continue
        filters = search_filters(sample.body)
        vector = embed_query(sample.text, settings)
        with session_scope(custom_plans=True) as session:
            viewer = agent_viewer(
                session=session,
                settings=settings,
                tenant_id="bench",
                user_id=sample.user_id,
                agent_id="main",
            )
            hits = search_notes(
                session=session,
                viewer=viewer,
                query=sample.text,
                vector=vector,
                top_k=10,
                settings=settings,
                filters=filters,
                options=SearchOptions(activation=False),
            )
        sample.full_without_threshold = len(hits) >= 10
