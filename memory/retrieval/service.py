"""The synchronous read path: candidate routes → fusion → ACT-R activation → MMR → top k.

Invariants: only notes the viewer may see are ever loaded (every route applies the access
rules in SQL); the request path does no write-time work (terms, tsvectors and embeddings
were computed by the pipeline) and writes nothing (access recording is the caller's
follow-up task); with noise disabled the ranking is deterministic.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.activation.model import (
    activation_breakdown,
    break_ties_by_noise,
    make_noise_rng,
    ranked_base_level,
)
from memory.config import Settings
from memory.db import plan_generically
from memory.retrieval import routes as r
from memory.retrieval.aside import OpenSession
from memory.retrieval.candidates import (  # noqa: F401 - the read path's public names
    ALL_ROUTES,
    DEFAULT_ROUTES,
    ROUTE_LIMIT,
    QueryVector,
    SearchOptions,
    run_routes,
)
from memory.retrieval.fusion import fuse, length_prior, to_relevance
from memory.retrieval.gate import asks_anything
from memory.retrieval.hits import SearchHit, json_number  # noqa: F401 - public names
from memory.retrieval.mmr import mmr
from memory.retrieval.rows import ScoredNote, load_candidates, pool_vectors
from memory.retrieval.sparse import SparseQuery, resolve_sparse_query, sparse_boosts
from memory.retrieval.speaker import SpeakerPrior, speaker_prior
from memory.types import utcnow

LINK_SEEDS = 10
LINK_FACTOR = 0.5
SPEAKER_BOOST = 0.2
VERBATIM_BOOST = 0.5
# The dense routes' z-scores use a stddev of at least this cosine. When nothing is like
# the query (a pasted log's hundred passages all at cosine 0.05-0.09 to "why did job 31337
# fail?"), their differences are noise; as z-scores they became 5 standard deviations and
# buried the one passage the lexical routes found by its words.
MIN_COSINE_SPREAD = 0.04
COSINE_SPREADS = {"dense": MIN_COSINE_SPREAD, "dense_window": MIN_COSINE_SPREAD}
MMR_LAMBDA = 0.7
# Candidates scored per query after fusion. Scoring moves a note little against its
# fused rank: on LoCoMo, 27 of 30,720 top-20 hits came from fused ranks 101-150, and
# R@10 per category was the same scoring 80, 100 or 150 (commit 6517e76). Each one
# costs its row, base level and sparse products in the read.
SCORED_CANDIDATES = 100
NEIGHBOUR_SEEDS = 60


def _ranks(scores: dict[uuid.UUID, float]) -> dict[uuid.UUID, int]:
    return {
        note_id: rank
        for rank, (note_id, _) in enumerate(sorted(scores.items(), key=lambda kv: -kv[1]), start=1)
    }


def search_notes(
    *,
    session: Session,
    viewer: Viewer,
    query: str,
    vector: QueryVector,
    top_k: int,
    settings: Settings,
    filters: r.SearchFilters | None = None,
    options: SearchOptions | None = None,
    now: datetime | None = None,
    aside: OpenSession | None = None,
    sparse: SparseQuery = None,
    asker: str | None = None,
) -> list[SearchHit]:
    """The top_k notes for `query` that the viewer may see, best first, with explanations.

    `vector` may still be pending (`candidates.PendingVector`): it is waited for when the
    dense route needs it, after the lexical routes have run; so may `sparse`, the query's
    sparse vector, waited for when the candidates' rows are read. With `aside` (a second
    transaction's opener) the dense route runs beside the lexical ones
    (`memory.retrieval.aside`); the answer is the same. `asker` is the user's name when
    the caller read the query's first person as theirs (`memory.retrieval.speaker`)."""
    filters, options, now = (
        filters or r.SearchFilters(),
        options or SearchOptions(),
        now or utcnow(),
    )
    options = _with_settings(options, settings)
    if options.skip_filler and not asks_anything(query):
        return []
    # Access rules and filters as of now; `now` is the activation's clock.
    scope = r.ReadScope(viewer, filters)
    found = run_routes(session, scope, query, vector, options, aside)
    plan_generically(session)  # the statements from here on read notes by id
    lexical_routes = {k: v for k, v in found.items() if k != "verbatim"}
    fused = (
        fuse(lexical_routes, method=options.fusion, min_spreads=COSINE_SPREADS)  # type: ignore[arg-type]
        if lexical_routes
        else {}
    )
    for note_id, matched in found.get("verbatim", {}).items():
        fused[note_id] = (
            fused.get(note_id, min(fused.values(), default=0.0)) + VERBATIM_BOOST * matched
        )
    relevance = to_relevance(fused) if fused else {}
    smooth = bool(relevance) and "neighbours" in options.routes and _allows(options, "neighbours")
    # Smoothing only raises the seeds, already the best, so the notes worth scoring are
    # known before it: one statement reads their rows and the seeds' adjacent turns.
    best = _best(relevance, SCORED_CANDIDATES)
    seeds = _best(relevance, NEIGHBOUR_SEEDS) if smooth else []
    reading = {
        "now": now,
        "decay": settings.activation.decay_parameter,
        "sparse_query": resolve_sparse_query(sparse) if options.sparse_weight else None,
    }
    notes, adjacent = load_candidates(session, scope, best, seeds, **reading)
    if smooth:
        relevance = _smooth_by_neighbours(relevance, adjacent, options.neighbour_weight)
    links: dict[uuid.UUID, tuple[float, uuid.UUID]] = {}
    if "links" in options.routes and relevance and _allows(options, "links"):
        links, notes = _with_links(session, scope, relevance, notes, options.link_weight, reading)
    prior = speaker_prior(query, notes.values(), asker) if options.speaker_prior else None
    passed, below = _score(notes, relevance, found, links, prior, now, settings, options)
    _add_sparse_channel(passed, options.sparse_weight or 0.0)
    if settings.activation.noise_ties_only:
        passed = break_ties_by_noise(
            passed,
            lambda h: h.score,
            lambda h: h.activation.noise if h.activation else 0.0,
            settings.activation.noise_tie_window,
        )
    chosen = _select(session, viewer, passed, top_k, options)
    if filters.narrows and len(chosen) < top_k:
        # A filter names the slice the caller wants ranked ("decisions since Monday"), so
        # its answer is filled to top_k with the slice's best notes below the retrieval
        # threshold, after every note above it and flagged `threshold_passed: false`,
        # rather than answering short as if the filter had starved the routes. Unfiltered
        # searches and /v1/context keep the threshold as a hard cut (DESIGN.md §5).
        chosen += below[: top_k - len(chosen)]
    return chosen


def _with_settings(options: SearchOptions, settings: Settings) -> SearchOptions:
    """The options with the server's settings where the caller left them unset."""
    if options.scan_tuples is None:
        options = replace(options, scan_tuples=settings.retrieval.filtered_scan_tuples)
    if options.length_prior is None:
        options = replace(options, length_prior=settings.retrieval.length_prior)
    if options.sparse_weight is None:
        options = replace(options, sparse_weight=settings.sparse.weight)
    return options


def _allows(options: SearchOptions, step: str) -> bool:
    return options.deadline is None or options.deadline.allows(step)


def _best(relevance: dict[uuid.UUID, float], count: int) -> list[uuid.UUID]:
    """The `count` most relevant ids; ties keep the routes' order (a stable sort)."""
    return sorted(relevance, key=lambda note_id: -relevance[note_id])[:count]


def _with_links(
    session: Session,
    scope: r.ReadScope,
    relevance: dict[uuid.UUID, float],
    notes: dict[uuid.UUID, ScoredNote],
    link_weight: float,
    reading: dict[str, Any],
) -> tuple[dict[uuid.UUID, tuple[float, uuid.UUID]], dict[uuid.UUID, ScoredNote]]:
    """One hop of links from the best notes, and the notes worth scoring, ranked by
    relevance plus link spread (the linked notes join `relevance` at 0)."""
    seeds = dict(sorted(relevance.items(), key=lambda kv: -kv[1])[:LINK_SEEDS])
    links = r.linked_route(session, scope, seeds, limit=ROUTE_LIMIT)
    for note_id in links:
        relevance.setdefault(note_id, 0.0)

    def promise(note_id: uuid.UUID) -> float:
        return relevance[note_id] + link_weight * links.get(note_id, (0.0, note_id))[0]

    best = sorted(relevance, key=promise, reverse=True)[:SCORED_CANDIDATES]
    missing = [note_id for note_id in best if note_id not in notes]
    notes = {**notes, **load_candidates(session, scope, missing, **reading)[0]}
    return links, {note_id: notes[note_id] for note_id in best if note_id in notes}


def _smooth_by_neighbours(
    relevance: dict[uuid.UUID, float],
    adjacent: dict[uuid.UUID, list[uuid.UUID]],
    weight: float,
) -> dict[uuid.UUID, float]:
    """rel'(d) = rel(d) + weight · max rel(adjacent turn of d), renormalised to [0, 1];
    `adjacent` holds the seeds' adjacent turns (`rows.load_candidates`).

    An answer often sits in the turn after the one that matches the question's words;
    adding the neighbour's evidence to the note's own score beats returning neighbours
    as extra results (retrieval-notes.md). Only seeds rise, and no note falls.
    """
    smoothed = {
        note_id: rel
        + weight * max((relevance.get(n, 0.0) for n in adjacent.get(note_id, [])), default=0.0)
        for note_id, rel in relevance.items()
    }
    return to_relevance(smoothed)


def _score(
    notes: dict[uuid.UUID, ScoredNote],
    relevance: dict[uuid.UUID, float],
    found: dict[str, dict[uuid.UUID, float]],
    links: dict[uuid.UUID, tuple[float, uuid.UUID]],
    speaker: SpeakerPrior | None,
    now: datetime,
    settings: Settings,
    options: SearchOptions,
) -> tuple[list[SearchHit], list[SearchHit]]:
    """(passed, below): the candidates at or above the retrieval threshold and those
    under it, each best first. Without activation every candidate has passed."""
    ranks = {name: _ranks(scores) for name, scores in found.items()}
    rng = (
        make_noise_rng(settings.activation.noise_seed)
        if settings.activation.noise_enabled
        else None
    )
    weight = options.length_prior or 0.0
    priors = length_prior({i: n.term_count for i, n in notes.items()}, weight)
    hits: list[SearchHit] = []
    below: list[SearchHit] = []
    for note_id, note in notes.items():
        boost = SPEAKER_BOOST * speaker(note) if speaker is not None else 0.0
        prior = priors.get(note_id, 0.0)
        rel = min(1.0, max(0.0, relevance.get(note_id, 0.0) + boost + prior))
        spread = options.link_weight * links[note_id][0] if note_id in links else 0.0
        breakdown = None
        score = rel + spread
        if options.activation:
            base = ranked_base_level(
                note.base_level,
                note.first_access_at,
                now,
                decay=settings.activation.decay_parameter,
                cap=settings.activation.rehearsal_cap,
            )
            breakdown = activation_breakdown(
                base=base,
                last_access=note.last_access_at,
                now=now,
                relevance=rel,
                half_life_hours=note.half_life_hours,
                settings=settings.activation,
                rng=rng,
                link_spread=spread * settings.activation.context_weight,
            )
            score = breakdown.total
        route_ranks = {name: at for name, rk in ranks.items() if (at := rk.get(note_id))}
        if note_id in links:
            route_ranks["links"] = 1
        hit = SearchHit(note, score, rel, breakdown, route_ranks, spread, boost, prior)
        hit.similarity = found.get("dense", {}).get(note_id)
        (hits if breakdown is None or breakdown.threshold_passed else below).append(hit)
    for group in (hits, below):
        group.sort(key=lambda h: (-h.score, str(h.note.id)))
    return hits, below


def _add_sparse_channel(hits: list[SearchHit], weight: float) -> None:
    """The sparse channel added to the hits' scores (`memory.retrieval.sparse`), re-sorted."""
    boosts = sparse_boosts(
        {h.note.id: h.score for h in hits},
        {h.note.id: h.note.sparse_own for h in hits},
        {h.note.id: h.note.sparse_window for h in hits},
        weight,
    )
    for hit in hits:
        hit.sparse = boosts[hit.note.id]
        hit.score += hit.sparse
    hits.sort(key=lambda h: (-h.score, str(h.note.id)))


def _select(
    session: Session, viewer: Viewer, hits: list[SearchHit], top_k: int, options: SearchOptions
) -> list[SearchHit]:
    if not options.mmr or len(hits) <= top_k:
        return hits[:top_k]
    pool = hits[: max(top_k * 3, 30)]
    top = max(h.score for h in pool)
    bottom = min(h.score for h in pool)
    span = (top - bottom) or 1.0
    by_id = {h.note.id: h for h in pool}
    order = mmr(
        [h.note.id for h in pool],
        {h.note.id: (h.score - bottom) / span for h in pool},
        pool_vectors(session, viewer, [h.note.id for h in pool]),
        lam=MMR_LAMBDA,
        k=top_k,
    )
    return [by_id[i] for i in order]
