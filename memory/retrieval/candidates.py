"""Candidate routes of the read path and the switches that choose them.

Invariant: every route applies the access rules and the filters in SQL
(`scope.scope_conditions`), so no candidate the viewer may not see is ever produced.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeAlias

import numpy as np
from sqlalchemy.orm import Session

from memory.notes.vectors import vector_text
from memory.retrieval import bm25 as b
from memory.retrieval import routes as r
from memory.retrieval.aside import OpenSession, start_aside
from memory.retrieval.budget import Deadline
from memory.retrieval.text import analyse, verbatim_tokens

ROUTE_LIMIT = 100
ALL_ROUTES = ("dense", "dense_window", "bm25", "bm25_window", "verbatim", "neighbours", "links")
# Link expansion measured -0.005 to -0.02 R@10 on LoCoMo (benchmarks/README.md), so it is
# available but off by default.
DEFAULT_ROUTES = tuple(route for route in ALL_ROUTES if route != "links")


class PendingVector(Protocol):
    """A query vector still being computed (a `concurrent.futures.Future`): the caller
    embeds the query while the routes that need no vector run."""

    def result(self, timeout: float | None = None) -> np.ndarray: ...


# A route's candidates, or None when a budget left no time to wait for it.
Step: TypeAlias = Callable[[], dict[uuid.UUID, float] | None]
# The query's vector, one still being computed, or None (the dense routes are skipped).
QueryVector: TypeAlias = np.ndarray | PendingVector | None


@dataclass(frozen=True)
class SearchOptions:
    """Which parts of the read path run (the benchmark's ablation switches them off)."""

    routes: tuple[str, ...] = DEFAULT_ROUTES
    speaker_prior: bool = True
    # Weight of the length prior: relevance + weight · z(ln term_count) over the scored
    # candidates (`fusion.length_prior`); 0 switches it off, None: `search_notes` takes
    # `retrieval.length_prior`.
    length_prior: float | None = None
    activation: bool = True
    mmr: bool = True
    fusion: str = "zscore"
    # Share of the best adjacent turn's relevance added to a note's (context in the score).
    neighbour_weight: float = 0.3
    # Share of a linked strong candidate's relevance a note receives (one hop).
    link_weight: float = 0.5
    # The read's time budget (/v1/context): optional steps are skipped once it has run out.
    deadline: Deadline | None = None
    # Graph entries a filtered search's dense scan may visit; None: `search_notes` takes
    # `retrieval.filtered_scan_tuples`.
    scan_tuples: int | None = None


def run_routes(
    session: Session,
    scope: r.ReadScope,
    query: str,
    vector: QueryVector,
    options: SearchOptions,
    aside: OpenSession | None = None,
) -> dict[str, dict[uuid.UUID, float]]:
    """Each enabled route's candidates (keyed in `steps` order); past `options.deadline`
    only the first one runs.

    The lexical routes first (BM25 alone is the best single route on LoCoMo), so a read
    cut short by its budget still has the candidates that matter most, and a pending
    `vector` is waited for only when the dense route runs: the query's embedding (CPU in
    this process) overlaps the lexical statements (CPU in PostgreSQL's). The window route
    runs after the dense one only when it scores the other routes' candidates. With
    `aside`, the dense route and a window route that selects its own candidates run in
    transactions of their own from the start (`memory.retrieval.aside`), beside BM25 here;
    the candidates are the same either way.
    """
    terms: b.QueryTerms | None = None
    text_form: str | None = None

    def query_vector() -> str:
        # The vector's text form, once for the dense and the window statements.
        nonlocal text_form
        if text_form is None:
            ready = vector if isinstance(vector, np.ndarray) else vector.result()  # type: ignore[union-attr]
            text_form = vector_text(ready)
        return text_form

    def dense(on: Session) -> dict[uuid.UUID, float]:
        return r.dense_route(
            on, scope, query_vector(), limit=ROUTE_LIMIT, scan_tuples=options.scan_tuples
        )

    found: dict[str, dict[uuid.UUID, float]] = {}

    def found_so_far() -> list[uuid.UUID]:
        return list(dict.fromkeys(note_id for scores in found.values() for note_id in scores))

    def load_terms() -> b.QueryTerms:
        nonlocal terms
        if terms is None:
            terms = b.load_query_terms(session, scope.viewer, analyse(query))
        return terms

    def bm25(window: bool, on: Session = session) -> dict[uuid.UUID, float]:
        among = None
        if window and not _window_bounded(load_terms()):
            # Even the rarest term is in thousands of windows (a window holds three turns'
            # words): score the other routes' candidates rather than scan all its matches.
            among = found_so_far()
        return b.bm25_route(on, scope, load_terms(), limit=ROUTE_LIMIT, window=window, among=among)

    def window_of_candidates() -> dict[uuid.UUID, float]:
        # Scores the notes the other routes found; searching window vectors through their
        # own HNSW graph ranked worse on LoCoMo (R@10 .797 against .804) and cost a graph.
        return r.window_similarity(session, scope.viewer, found_so_far(), query_vector())

    pending: dict[str, Future[dict[uuid.UUID, float]]] = {}

    def start(name: str, work: Callable[[Session], dict[uuid.UUID, float]]) -> None:
        if aside is not None and name in options.routes:
            started = start_aside(aside, work)
            if started is not None:
                pending[name] = started

    def joined_or_run(name: str, inline: Callable[[], dict[uuid.UUID, float]]) -> Step:
        if name not in pending:
            return inline
        return lambda: _joined(pending[name], options.deadline, name)

    if vector is not None:
        start("dense", dense)
    if aside is not None and "bm25_window" in options.routes and _window_bounded(load_terms()):
        start("bm25_window", partial(bm25, True))
    steps: dict[str, Step] = {
        "bm25": lambda: bm25(False),
        "dense": joined_or_run("dense", lambda: dense(session)),
        "verbatim": lambda: r.verbatim_route(
            session, scope, verbatim_tokens(query), limit=ROUTE_LIMIT
        ),
        "bm25_window": joined_or_run("bm25_window", lambda: bm25(True)),
        "dense_window": window_of_candidates,
    }
    attempted: set[str] = set()

    def run(name: str) -> None:
        if name in attempted or name not in options.routes:
            return
        attempted.add(name)
        if vector is None and name.startswith("dense"):
            return
        if found and options.deadline is not None and not options.deadline.allows(name):
            return
        scores = steps[name]()
        if scores is not None:
            found[name] = scores

    run("bm25")
    run("verbatim")
    if _window_bounded(terms):
        run("bm25_window")  # it selects its own candidates: no need to wait for dense's
    for name in ("dense", "bm25_window", "dense_window"):
        run(name)
    return {name: found[name] for name in steps if name in found}


def _window_bounded(terms: b.QueryTerms | None) -> bool:
    """Whether the window route selects its own candidates (else it scores `among`, the
    other routes' candidates; unknown before the terms are loaded)."""
    return terms is not None and terms.bounded.get("window", True)


def _joined(
    pending: Future[dict[uuid.UUID, float]], deadline: Deadline | None, name: str
) -> dict[uuid.UUID, float] | None:
    """The route run aside, waited for while the read's budget lasts (None past it: the
    step is recorded as skipped, and its transaction finishes on its own)."""
    if deadline is None:
        return pending.result()
    try:
        return pending.result(timeout=max(0.0, deadline.at - time.monotonic()))
    except FutureTimeout:
        deadline.skipped.append(name)
        return None
