"""Per-query score normalisation, route fusion and BM25 (DESIGN.md §5 step 2).

Each candidate route (dense, lexical, links, working memory…) scores its own candidates
on its own scale. Scores are normalised per query and per route, then summed with
weights. Measured on LoCoMo (retrieval-notes.md): z-score or min-max fusion with equal
weights beats BM25 alone; plain RRF with k = 60 is worse than BM25 alone, so RRF is kept
only as a baseline for the ablation.

Invariants: functions are pure and never mutate their inputs; every output dict has
exactly the keys of the inputs (the union of route keys for `fuse`; none from
`length_prior` when it is off); non-finite input scores raise ValueError (NaN would
silently poison every sum downstream).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar

K = TypeVar("K", bound=Hashable)

FusionMethod = Literal["zscore", "minmax", "rrf"]
DEFAULT_RRF_K = 60
# A route whose candidates all tie: their z-score against one absent note, and its.
TIED_Z = 1.0


def _check_finite(scores: Mapping[K, float]) -> None:
    for key, value in scores.items():
        if not math.isfinite(value):
            raise ValueError(f"non-finite score {value!r} for {key!r}")


def zscore(scores: Mapping[K, float], *, min_spread: float = 0.0) -> dict[K, float]:
    """(x - mean) / population stddev. All-equal (or single) scores → all 0.0.

    Zero spread carries no ranking information, so it adds nothing to a fused sum. With
    `min_spread`, the stddev is at least that: scores that differ in the third decimal
    are not stretched into several standard deviations.
    """
    _check_finite(scores)
    if not scores:
        return {}
    values = list(scores.values())
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    std = max(std, min_spread) if std else std
    if std == 0.0:
        return dict.fromkeys(scores, 0.0)
    return {key: (value - mean) / std for key, value in scores.items()}


def minmax(scores: Mapping[K, float]) -> dict[K, float]:
    """(x - min) / (max - min) into [0, 1]. All-equal (or single) scores → all 1.0.

    Equal scores are all the best a route has, and with 1.0 a route's candidates still
    rank above the 0.0 that `fuse` gives documents the route did not return.
    """
    _check_finite(scores)
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def _rrf(scores: Mapping[K, float], k: int) -> dict[K, float]:
    """1 / (k + rank), rank 1-based by descending score; ties share the best rank.

    Competition ranking ("1224") makes the result independent of dict order.
    """
    _check_finite(scores)
    ordered = sorted(scores.values(), reverse=True)
    first_rank: dict[float, int] = {}
    for position, value in enumerate(ordered, start=1):
        first_rank.setdefault(value, position)
    return {key: 1.0 / (k + first_rank[value]) for key, value in scores.items()}


def _normalise(
    scores: Mapping[K, float], method: FusionMethod, rrf_k: int, min_spread: float = 0.0
) -> tuple[dict[K, float], float]:
    """Normalised scores of one route and the value a document absent from it receives.

    Absent value: z-score → the route's minimum normalised value. A route returns its top
    N, so a document it did not return scored at most like its worst one; the mean (0.0)
    would reward absence over a below-average presence. When all its candidates tie,
    they get +TIED_Z and absent documents -TIED_Z (z-scores would make them equal).
    Min-max → 0.0, which is its minimum too. RRF → 0.0, the standard contribution of an
    unranked document.
    """
    if method == "zscore":
        normed = zscore(scores, min_spread=min_spread)
        low, high = min(normed.values()), max(normed.values())
        if low == high:
            # Every candidate ties (one note holds the query's only rare term: a job id in
            # a log): z-scores give them all 0.0, the value absent notes get, so the most
            # selective answer a route can give added nothing. Scored against one absent
            # note instead, they are +1 and the absent -1, as z-scores of {s, 0} are.
            return dict.fromkeys(scores, TIED_Z), -TIED_Z
        return normed, low
    if method == "minmax":
        return minmax(scores), 0.0
    if method == "rrf":
        return _rrf(scores, rrf_k), 0.0
    raise ValueError(f"unknown fusion method {method!r}")


def fuse(
    routes: Mapping[str, Mapping[K, float]],
    *,
    method: FusionMethod = "zscore",
    weights: Mapping[str, float] | None = None,
    rrf_k: int = DEFAULT_RRF_K,
    min_spreads: Mapping[str, float] | None = None,
) -> dict[K, float]:
    """Fused score Σ_route weight · normalised score, over the union of all candidates.

    Routes not named in `weights` get weight 1.0 (equal weights measured best); empty
    routes contribute nothing. Weights must be ≥ 0 and rrf_k > 0, else ValueError.
    `min_spreads` floors a route's stddev for z-scores (`zscore`'s min_spread).
    """
    if rrf_k <= 0:
        raise ValueError(f"rrf_k must be > 0, got {rrf_k}")
    weights = weights or {}
    for name, weight in weights.items():
        if not math.isfinite(weight) or weight < 0.0:
            raise ValueError(f"weight for route {name!r} must be finite and >= 0")
    # Ordered union, so output order follows route order. Sums run over positions: the
    # keys (note UUIDs, hashed in Python) are looked up once per route entry, not once
    # per route and candidate; each key's terms are still added in route order.
    keys = list(dict.fromkeys(key for scores in routes.values() for key in scores))
    position = {key: i for i, key in enumerate(keys)}
    totals = [0.0] * len(keys)
    for name, scores in routes.items():
        if not scores:
            continue
        spread = (min_spreads or {}).get(name, 0.0)
        normed, absent = _normalise(scores, method, rrf_k, spread)
        weight = weights.get(name, 1.0)
        column = [absent] * len(keys)
        for key, value in normed.items():
            column[position[key]] = value
        totals = [total + weight * value for total, value in zip(totals, column, strict=True)]
    return dict(zip(keys, totals, strict=True))


def to_relevance(fused: Mapping[K, float]) -> dict[K, float]:
    """Fused scores → relevance in [0, 1] for this query (min-max).

    The best candidate gets 1.0 and the worst 0.0; a single candidate, or candidates
    that all tie, get 1.0 (each is the best this query has).
    """
    return minmax(fused)


def length_prior(term_counts: Mapping[K, int], weight: float) -> dict[K, float]:
    """weight · z(ln term_count) per candidate: a note with more words of its own ranks a
    little higher among candidates of similar relevance (counts below 1 count as 1).

    Why: the window routes credit a note with its neighbours' words, so a turn that says
    little itself ("What did it look like?") can outrank the informative turn beside it,
    and it is of little use as a memory on its own. On LoCoMo weight 0.05 moved R@10
    .801 -> .810, every category up (commit cf3a31b); /v1/context
    switches it off (a token budget). Empty when off or with fewer than two candidates.
    """
    if weight == 0.0 or len(term_counts) < 2:
        return {}
    lengths = {key: math.log(max(count, 1)) for key, count in term_counts.items()}
    return {key: weight * z for key, z in zscore(lengths).items()}


def _idf(df: int, n_docs: int) -> float:
    """Lucene-style idf ln(1 + (N - df + 0.5)/(df + 0.5)); df clamped to [0, N] so stale
    collection stats cannot make it negative."""
    n = max(n_docs, 0)
    df = min(max(df, 0), n)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def bm25_scores(
    query_terms: Sequence[str],
    docs_terms: Mapping[K, Sequence[str]],
    *,
    doc_freq: Mapping[str, int],
    n_docs: int,
    avg_len: float,
    k1: float = 1.2,
    b: float = 0.75,
) -> dict[K, float]:
    """Okapi BM25 of each candidate document, with collection-wide statistics.

    score(D) = Σ_{t ∈ distinct query terms} idf(t) · tf·(k1+1) / (tf + k1·(1 - b + b·|D|/avgdl)).
    Query terms count once each (k3 = 0: repeating a word in the query does not double
    it). Terms absent from `doc_freq` have df = 0. Every document of `docs_terms` is in
    the result, with 0.0 when it matches no term. avg_len ≤ 0 (empty stats) disables
    length normalisation instead of dividing by zero. The caller tokenises (stemming,
    stopwords) identically for query, documents and stats.
    """
    terms = list(dict.fromkeys(query_terms))
    idf = {term: _idf(doc_freq.get(term, 0), n_docs) for term in terms}
    scores: dict[K, float] = {}
    for key, doc in docs_terms.items():
        tf = Counter(doc)
        ratio = len(doc) / avg_len if avg_len > 0 else 1.0
        norm = k1 * (1.0 - b + b * ratio)
        scores[key] = math.fsum(
            idf[t] * tf[t] * (k1 + 1.0) / (tf[t] + norm) for t in terms if tf[t] > 0
        )
    return scores
