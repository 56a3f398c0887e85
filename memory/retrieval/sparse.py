"""The learned sparse channel: the query's SPLADE inner products with each scored candidate.

Each candidate row carries two inner products (`rows.load_candidates`): its own vector's
with the query's, and for a seed its own plus its adjacent turns' (a window read at
query time; other candidates' windows are their own). Both are z-scored over the
candidates that passed the threshold and added to their scores, scaled by those scores'
spread so that the weight means the same whatever the scores' scale:

    score'(d) = score(d) + weight · std(score) · (z(own(d)) + z(window(d)))

Measured on LoCoMo's candidates (`benchmarks.locomo_sparse`, commits 4675869 and
8c05209): the first channel to lift every category at once, windows for the seeds alone
as good as for every candidate.

Invariants: a candidate without a sparse inner product (no vector stored, or no query
vector) gets 0, the mean's place, so it neither rises nor falls for lack of one; the
boosts are finite, and all 0 when fewer than two candidates have a value or the weight is 0;
a candidate whose score is not finite gets 0 and is left out of the z-scores and the spread.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Protocol, TypeAlias, TypeVar

from memory.retrieval.fusion import zscore

K = TypeVar("K", bound=Hashable)


class PendingSparse(Protocol):
    """The query's sparse vector still being encoded (a `concurrent.futures.Future`)."""

    def result(self, timeout: float | None = None) -> str | None: ...


# The query's sparse vector in pgvector's text form, one still being encoded, or None.
SparseQuery: TypeAlias = str | PendingSparse | None


def resolve_sparse_query(query: SparseQuery) -> str | None:
    return query if query is None or isinstance(query, str) else query.result()


def sparse_boosts(
    scores: Mapping[K, float],
    own: Mapping[K, float | None],
    window: Mapping[K, float | None],
    weight: float,
) -> dict[K, float]:
    """What the channel adds to each of `scores`' keys (see the module's formula)."""
    finite = [value for value in scores.values() if math.isfinite(value)]
    if weight == 0 or len(finite) < 2:
        return dict.fromkeys(scores, 0.0)
    mean = math.fsum(finite) / len(finite)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / len(finite))
    channels = [_present_z(scores, own), _present_z(scores, window)]
    return {
        key: weight * spread * sum(z.get(key, 0.0) for z in channels)
        if math.isfinite(scores[key])
        else 0.0
        for key in scores
    }


def _present_z(scores: Mapping[K, float], values: Mapping[K, float | None]) -> dict[K, float]:
    """z-scores of the keys with a finite score and a value (others stay at 0)."""
    present = {
        key: value
        for key, score in scores.items()
        if math.isfinite(score) and (value := values.get(key)) is not None
    }
    return zscore(present) if len(present) >= 2 else {}
