"""What-if timings for the latency diagnosis: product pieces against cheaper variants.

Nothing here changes product code: each variant calls the same functions with other
inputs (a lower BM25 selection cap), other session settings (hnsw.ef_search, an exact
scan) or loads fewer columns, on the same database and queries, and reports time and
how much of the product's answer the variant keeps (overlap of the route's top 100).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from sqlalchemy import select, text
from sqlalchemy.orm import Session, load_only

from benchmarks.common import summarise
from memory.access.policy import agent_viewer
from memory.clients.embedder import embed_query
from memory.config import get_settings
from memory.db import session_scope
from memory.notes.models import Note
from memory.notes.vectors import vector_text
from memory.retrieval import bm25 as b
from memory.retrieval import routes as r
from memory.retrieval.rows import load_candidates
from memory.retrieval.service import ROUTE_LIMIT, SearchOptions, run_routes
from memory.retrieval.text import analyse
from memory.types import utcnow

SLIM_COLUMNS = (
    Note.id,
    Note.content,
    Note.kind,
    Note.domain,
    Note.visibility,
    Note.speaker,
    Note.agent_id,
    Note.occurred_at,
    Note.access_times,
    Note.access_count,
    Note.first_access_at,
    Note.half_life_hours,
)
BM25_CAPS = (2000, 500)


def _ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def _overlap(a: dict, b: dict) -> float:
    return len(set(a) & set(b)) / max(len(a), 1)


def _load_variants(
    session: Session, scope: r.ReadScope, ids: list[Any], out: dict[str, list[float]]
) -> None:
    ms, _ = _ms(lambda: load_candidates(session, scope, ids, now=utcnow(), decay=0.5))
    out["load_notes (product: whole rows)"].append(ms)
    session.expunge_all()

    def slim() -> None:
        rows = session.scalars(
            select(Note).options(load_only(*SLIM_COLUMNS)).where(Note.id.in_(ids))
        ).all()
        pool = [n.id for n in rows[:30]]
        session.execute(select(Note.id, Note.embedding).where(Note.id.in_(pool))).all()

    ms, _ = _ms(slim)
    out["load_notes slim (scoring columns + 30 vectors)"].append(ms)
    session.expunge_all()


def _bm25_variants(
    session: Session,
    user_id: str,
    scope: r.ReadScope,
    terms: b.QueryTerms,
    out: dict[str, list[float]],
) -> None:
    ms, base = _ms(lambda: b.bm25_route(session, scope, terms, limit=ROUTE_LIMIT, window=False))
    out["bm25 (product: rarest terms, up to MATCH_MAX_NOTES notes)"].append(ms)
    selective = list(terms.match.get("own", []))
    for cap in BM25_CAPS:
        counts = (
            session.execute(
                text(
                    "SELECT term FROM lexicon WHERE tenant_id = 'bench' AND user_id = :u AND "
                    "field = 'own' AND term = ANY(:t) AND doc_count <= :cap"
                ),
                {"u": user_id, "t": selective, "cap": cap},
            )
            .scalars()
            .all()
        )
        match = dict(terms.match)
        match["own"] = list(counts) or selective[:2]
        capped = replace(terms, match=match)
        ms, found = _ms(
            lambda c=capped: b.bm25_route(session, scope, c, limit=ROUTE_LIMIT, window=False)
        )
        out[f"bm25 select cap df <= {cap}"].append(ms)
        out[f"bm25 select cap df <= {cap}: overlap of top 100"].append(_overlap(base, found))


def _dense_variants(
    session: Session, scope: r.ReadScope, vector: np.ndarray, out: dict[str, list[float]]
) -> None:
    query_vector = vector_text(vector)
    ms, base = _ms(lambda: r.dense_route(session, scope, query_vector, limit=ROUTE_LIMIT))
    out["dense (product: HNSW ef_search 40, iterative)"].append(ms)
    for setting, label in (
        ("SET LOCAL hnsw.ef_search = 100", "dense HNSW ef_search 100"),
        ("SET LOCAL enable_indexscan = off", "dense exact (no HNSW)"),
    ):
        session.execute(text("SAVEPOINT whatif"))
        session.execute(text(setting))
        ms, found = _ms(lambda: r.dense_route(session, scope, query_vector, limit=ROUTE_LIMIT))
        session.execute(text("ROLLBACK TO SAVEPOINT whatif"))
        out[label].append(ms)
        out[f"{label}: overlap of top 100"].append(_overlap(base, found))


def what_if(user_id: str, queries: list[str]) -> dict[str, dict[str, float]]:
    """Per-variant summaries (ms, or overlap share) over the queries of one user."""
    settings = get_settings()
    out: dict[str, list[float]] = defaultdict(list)
    for query in queries:
        vector = embed_query(query, settings)
        with session_scope() as session:
            viewer = agent_viewer(
                session=session,
                settings=settings,
                tenant_id="bench",
                user_id=user_id,
                agent_id="main",
            )
            scope = r.ReadScope(viewer)
            found = run_routes(session, scope, query, vector, SearchOptions())
            ids = list({i for scores in found.values() for i in scores})
            out["candidates loaded"].append(len(ids))
            _load_variants(session, scope, ids, out)
            terms = b.load_query_terms(session, viewer, analyse(query))
            _bm25_variants(session, user_id, scope, terms, out)
            _dense_variants(session, scope, vector, out)
    return {k: summarise(v) for k, v in out.items()}
