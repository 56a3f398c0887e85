"""LoCoMo evaluation pieces: baselines over raw turns and the in-process ablation.

The ablation calls the same domain search function the API uses, with parts of the read
path switched off, against the database the benchmark ingested through the API.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from benchmarks.locomo_data import CATEGORIES, Question, Turn, recall
from memory.retrieval.fusion import bm25_scores
from memory.retrieval.text import analyse

KS = (5, 10, 20)
Retriever = Callable[[Question], list[set[str]]]


def evaluate(questions: Iterable[Question], retrieve: Retriever) -> dict[str, dict[str, float]]:
    """Mean R@5/10/20 per category name and 'overall'."""
    per: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for question in questions:
        ranked = retrieve(question)
        for k in KS:
            value = recall(question.evidence, ranked, k)
            per[CATEGORIES[question.category]][k].append(value)
            per["overall"][k].append(value)
    return {
        name: {f"R@{k}": round(statistics.fmean(values[k]), 4) for k in KS}
        for name, values in per.items()
    }


def turn_text(turn: Turn) -> str:
    caption = f" [image: {turn.caption}]" if turn.caption else ""
    return f"{turn.speaker}: {turn.text}{caption}"


def bm25_baseline(turns: list[Turn]) -> Retriever:
    """BM25 (k1 1.2, b 0.75, stopwords removed, stemmed) over "speaker: text" per turn."""
    by_conv: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for turn in turns:
        by_conv[turn.conversation][turn.dia_id] = analyse(turn_text(turn))
    stats = {}
    for conv, docs in by_conv.items():
        df: dict[str, int] = defaultdict(int)
        for terms in docs.values():
            for term in set(terms):
                df[term] += 1
        stats[conv] = (df, len(docs), statistics.fmean(len(t) for t in docs.values()))

    def retrieve(question: Question) -> list[set[str]]:
        df, n, avg = stats[question.conversation]
        scores = bm25_scores(
            analyse(question.question),
            by_conv[question.conversation],
            doc_freq=df,
            n_docs=n,
            avg_len=avg,
        )
        return [{d} for d, _ in sorted(scores.items(), key=lambda kv: -kv[1])[:20]]

    return retrieve


def dense_baseline(turns: list[Turn], embed: Callable[[list[str]], np.ndarray]) -> Retriever:
    """all-MiniLM-L6-v2 cosine over "speaker: text" per turn."""
    by_conv: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_conv[turn.conversation].append(turn)
    matrices = {conv: embed([turn_text(t) for t in ts]) for conv, ts in by_conv.items()}

    def retrieve(question: Question) -> list[set[str]]:
        vector = embed([question.question])[0]
        sims = matrices[question.conversation] @ vector
        order = np.argsort(-sims)[:20]
        return [{by_conv[question.conversation][i].dia_id} for i in order]

    return retrieve


def ablation_variants() -> dict[str, dict[str, object]]:
    """Each variant switches one part of the read path off (names say which)."""
    from memory.retrieval.service import DEFAULT_ROUTES

    variants: dict[str, dict[str, object]] = {"full": {}}
    for route in DEFAULT_ROUTES:
        variants[f"without {route}"] = {"routes": tuple(r for r in DEFAULT_ROUTES if r != route)}
    variants["with links (weight 0.5)"] = {"routes": (*DEFAULT_ROUTES, "links")}
    variants["with links (weight 0.1)"] = {"routes": (*DEFAULT_ROUTES, "links"), "link_weight": 0.1}
    variants["without speaker prior"] = {"speaker_prior": False}
    variants["without length prior"] = {"length_prior": 0.0}
    variants["without the sparse channel"] = {"sparse_weight": 0.0}
    variants["without activation (ACT-R)"] = {"activation": False}
    variants["without MMR"] = {"mmr": False}
    variants["fusion min-max"] = {"fusion": "minmax"}
    variants["fusion RRF k=60"] = {"fusion": "rrf"}
    return variants


def search_question(
    session: Any, question: Question, *, tenant_id: str, agent_id: str, **search: Any
) -> list[Any]:
    """`search_notes` for one question as the benchmark's agent sees its user's notes;
    `search` holds search_notes' vector, top_k and options (and the sparse query vector,
    encoded here when not given)."""
    from memory.access.policy import agent_viewer
    from memory.clients.sparse_encoder import encode_sparse_query
    from memory.config import get_settings
    from memory.retrieval.service import search_notes

    settings = get_settings()
    viewer = agent_viewer(
        session=session,
        settings=settings,
        tenant_id=tenant_id,
        user_id=question.conversation,
        agent_id=agent_id,
    )
    search.setdefault("sparse", encode_sparse_query(question.question, settings))
    return search_notes(
        session=session,
        viewer=viewer,
        query=question.question,
        settings=settings,
        **search,
    )


def inprocess_retriever(tenant_id: str, agent_id: str, overrides: dict[str, object]) -> Retriever:
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.db import session_scope
    from memory.notes.service import note_sources
    from memory.retrieval.service import SearchOptions

    settings = get_settings()
    options = replace(SearchOptions(), **overrides)  # type: ignore[arg-type]

    def retrieve(question: Question) -> list[set[str]]:
        with session_scope() as session:
            hits = search_question(
                session,
                question,
                tenant_id=tenant_id,
                agent_id=agent_id,
                vector=embed_query(question.question, settings),
                top_k=20,
                options=options,
            )
            sources = note_sources(session=session, note_ids=[h.note.id for h in hits])
        return [{s["metadata"].get("dia_id") for s in sources[h.note.id]} for h in hits]

    return retrieve
