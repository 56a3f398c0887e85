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
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeAlias

import numpy as np
from sqlalchemy.orm import Session

from memory.notes.vectors import VectorParam
from memory.retrieval import bm25 as b
from memory.retrieval import routes as r
from memory.retrieval.aside import OpenSession, start_aside
from memory.retrieval.budget import Deadline
from memory.retrieval.text import analyse, verbatim_tokens

ROUTE_LIMIT = 100
ALL_ROUTES = ("dense", "dense_window", "bm25", "bm25_window", "verbatim", "neighbours", "links")
# The order of the routes in `run_routes`' answer (fusion sums them in this order).
ANSWER_ORDER = ("bm25", "dense", "verbatim", "bm25_window", "dense_window")
# Link expansion measured -0.005 to -0.02 R@10 on LoCoMo (commit 35797f0), so it is
# available but off by default.
DEFAULT_ROUTES = tuple(route for route in ALL_ROUTES if route != "links")


class PendingVector(Protocol):
    """A query vector still being computed (a `concurrent.futures.Future`): the caller
    embeds the query while the routes that need no vector run."""

    def result(self, timeout: float | None = None) -> np.ndarray: ...


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
    # Weight of the learned sparse channel (`memory.retrieval.sparse`); 0 switches it off,
    # None: `search_notes` takes `sparse.weight`.
    sparse_weight: float | None = None
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
    # /v1/context: a query made only of filler ("thanks!") finds nothing, without a
    # statement (`memory.retrieval.gate`).
    skip_filler: bool = False


def run_routes(
    session: Session,
    scope: r.ReadScope,
    query: str,
    vector: QueryVector,
    options: SearchOptions,
    aside: OpenSession | None = None,
) -> dict[str, dict[uuid.UUID, float]]:
    """Each enabled route's candidates (keyed in `ANSWER_ORDER`, whatever order they ran
    in); past `options.deadline` only the first one runs.

    The lexical routes first (BM25 alone is the best single route on LoCoMo), so a read
    cut short by its budget still has the candidates that matter most, and a pending
    `vector` is waited for only when the dense route runs: the query's embedding (CPU in
    this process) overlaps the lexical statements (CPU in PostgreSQL's). The window route
    runs after the dense one only when it scores the other routes' candidates. With
    `aside`, the dense route and a window route that selects its own candidates run in
    transactions of their own from the start (`memory.retrieval.aside`), beside BM25 here;
    the candidates are the same either way.
    """
    return _RouteRun(session, scope, query, vector, options, aside).run_all()


@dataclass
class _RouteRun:
    """One search's routes: what they found so far, and those running aside."""

    session: Session
    scope: r.ReadScope
    query: str
    vector: QueryVector
    options: SearchOptions
    aside: OpenSession | None
    found: dict[str, dict[uuid.UUID, float]] = field(default_factory=dict)
    terms: b.QueryTerms | None = None
    bound: VectorParam | None = None
    pending: dict[str, Future[dict[uuid.UUID, float]]] = field(default_factory=dict)
    attempted: set[str] = field(default_factory=set)
    # Window cosines looked up so far (`windowed`: the ids asked, with a window or not);
    # those of the dense route's candidates are looked up aside, after it (`_dense_aside`).
    windows: dict[uuid.UUID, float] = field(default_factory=dict)
    windowed: set[uuid.UUID] = field(default_factory=set)
    aside_windows: dict[uuid.UUID, float] = field(default_factory=dict)
    aside_windowed: list[uuid.UUID] = field(default_factory=list)

    def run_all(self) -> dict[str, dict[uuid.UUID, float]]:
        if self.vector is not None:
            self._start("dense", self._dense_aside)
        if self._runs_aside("bm25_window") and _window_bounded(self._load_terms()):
            self._start("bm25_window", partial(self._bm25, True))
        self._run("bm25")
        self._run("verbatim")
        if _window_bounded(self.terms):
            self._run("bm25_window")  # it selects its own candidates: no need for dense's
        self._windows_while_dense_runs()
        for name in ("dense", "bm25_window", "dense_window"):
            self._run(name)
        return {name: self.found[name] for name in ANSWER_ORDER if name in self.found}

    def _run(self, name: str) -> None:
        if name in self.attempted or name not in self.options.routes:
            return
        self.attempted.add(name)
        if self.vector is None and name.startswith("dense"):
            return
        deadline = self.options.deadline
        if self.found and deadline is not None and not deadline.allows(name):
            return
        scores = self._step(name)
        if scores is not None:
            self.found[name] = scores

    def _step(self, name: str) -> dict[uuid.UUID, float] | None:
        if name in self.pending:
            return _joined(self.pending[name], self.options.deadline, name)
        if name == "bm25" or name == "bm25_window":
            return self._bm25(name == "bm25_window")
        if name == "dense":
            return self._dense(self.session)
        if name == "verbatim":
            tokens = verbatim_tokens(self.query)
            return r.verbatim_route(self.session, self.scope, tokens, limit=ROUTE_LIMIT)
        # dense_window: scores the notes the other routes found; searching window vectors
        # through their own HNSW graph ranked worse on LoCoMo (R@10 .797 against .804).
        ids = self._found_so_far()
        if "dense" in self.pending and "dense" in self.found:  # joined: its look-up is done
            self.windows.update(self.aside_windows)
            self.windowed.update(self.aside_windowed)
        self._look_up_windows(ids)
        return {note_id: self.windows[note_id] for note_id in ids if note_id in self.windows}

    def _windows_while_dense_runs(self) -> None:
        """The lexical candidates' window cosines, while the request would otherwise wait
        for the dense route aside (the query's embedding, then the graph)."""
        deadline = self.options.deadline
        in_time = deadline is None or time.monotonic() < deadline.at
        if in_time and "dense" in self.pending and "dense_window" in self.options.routes:
            self._look_up_windows(self._found_so_far())

    def _look_up_windows(self, ids: list[uuid.UUID]) -> None:
        missing = [note_id for note_id in ids if note_id not in self.windowed]
        if missing:
            viewer, vector = self.scope.viewer, self._query_vector()
            self.windows.update(r.window_similarity(self.session, viewer, missing, vector))
            self.windowed.update(missing)

    def _runs_aside(self, name: str) -> bool:
        return self.aside is not None and name in self.options.routes

    def _start(self, name: str, work: Callable[[Session], dict[uuid.UUID, float]]) -> None:
        if self._runs_aside(name):
            started = start_aside(self.aside, work)  # type: ignore[arg-type]
            if started is not None:
                self.pending[name] = started

    def _query_vector(self) -> VectorParam:
        # Bound in binary, once for the dense and the window statements: its text form
        # took 0.2 ms of Python holding the interpreter lock, and PostgreSQL's parse more.
        if self.bound is None:
            vector = self.vector
            ready = vector if isinstance(vector, np.ndarray) else vector.result()  # type: ignore[union-attr]
            self.bound = VectorParam(ready)
        return self.bound

    def _dense(self, on: Session) -> dict[uuid.UUID, float]:
        vector, cap = self._query_vector(), self.options.scan_tuples
        return r.dense_route(on, self.scope, vector, limit=ROUTE_LIMIT, scan_tuples=cap)

    def _dense_aside(self, on: Session) -> dict[uuid.UUID, float]:
        """The dense route, then (in the same transaction) its candidates' window cosines,
        read by the request once it has joined this work."""
        scores = self._dense(on)
        if "dense_window" in self.options.routes:
            # Those the request has looked up meanwhile are not asked again.
            asked = [note_id for note_id in scores if note_id not in self.windowed]
            viewer, vector = self.scope.viewer, self._query_vector()
            self.aside_windows = r.window_similarity(on, viewer, asked, vector)
            self.aside_windowed = asked
        return scores

    def _found_so_far(self) -> list[uuid.UUID]:
        return list(dict.fromkeys(i for scores in self.found.values() for i in scores))

    def _load_terms(self) -> b.QueryTerms:
        if self.terms is None:
            self.terms = b.load_query_terms(self.session, self.scope.viewer, analyse(self.query))
        return self.terms

    def _bm25(self, window: bool, on: Session | None = None) -> dict[uuid.UUID, float]:
        terms, among = self._load_terms(), None
        if window and not _window_bounded(terms):
            # Even the rarest term is in thousands of windows (a window holds three turns'
            # words): score the other routes' candidates rather than scan all its matches.
            among = self._found_so_far()
        return b.bm25_route(
            on or self.session, self.scope, terms, limit=ROUTE_LIMIT, window=window, among=among
        )


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
