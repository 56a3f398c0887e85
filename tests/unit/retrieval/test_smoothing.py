"""Neighbour smoothing, and the invariant the read path's single candidate statement
relies on: the notes worth scoring are the same before and after smoothing, so their
rows and the seeds' adjacent turns are read together (`rows.load_candidates`)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.retrieval.service import (
    NEIGHBOUR_SEEDS,
    SCORED_CANDIDATES,
    _best,
    _smooth_by_neighbours,
)


def test_a_seed_gains_a_share_of_its_best_neighbour_then_all_are_renormalised() -> None:
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    relevance = {a: 1.0, b: 0.5, c: 0.2, d: 0.0}
    smoothed = _smooth_by_neighbours(relevance, {b: [a, c], c: [d]}, weight=0.3)
    # b: 0.5 + 0.3 * 1.0 = 0.8; c: 0.2 + 0.3 * 0.0; a and d unchanged; min-max over [0, 1].
    assert smoothed == pytest.approx({a: 1.0, b: 0.8, c: 0.2, d: 0.0})
    unknown = _smooth_by_neighbours({a: 1.0, b: 0.0}, {b: [uuid.uuid4()]}, weight=0.3)
    assert unknown == {a: 1.0, b: 0.0}  # a neighbour without relevance adds nothing


def test_best_keeps_the_routes_order_among_ties() -> None:
    ids = [uuid.uuid4() for _ in range(4)]
    relevance = dict(zip(ids, [0.5, 1.0, 0.5, 0.5], strict=True))
    assert _best(relevance, 3) == [ids[1], ids[0], ids[2]]


@settings(max_examples=200, deadline=None)
@given(
    # Multiples of 1/64: distinct scores stay distinct through min-max (rounding alone
    # could tie two scores a few ulps apart, and a tie keeps the routes' order).
    scores=st.lists(st.integers(0, 64).map(lambda i: i / 64), min_size=1, max_size=400),
    links=st.lists(st.tuples(st.integers(0, 399), st.integers(0, 399)), max_size=300),
    weight=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_the_notes_worth_scoring_are_known_before_smoothing(
    scores: list[float], links: list[tuple[int, int]], weight: float
) -> None:
    ids = [uuid.UUID(int=i + 1) for i in range(len(scores))]
    relevance = dict(zip(ids, scores, strict=True))
    seeds = set(_best(relevance, NEIGHBOUR_SEEDS))
    adjacent: dict[uuid.UUID, list[uuid.UUID]] = {}
    for seed, neighbour in links:
        if seed < len(ids) and neighbour < len(ids) and ids[seed] in seeds:
            adjacent.setdefault(ids[seed], []).append(ids[neighbour])
    smoothed = _smooth_by_neighbours(relevance, adjacent, weight)
    before = _best(relevance, SCORED_CANDIDATES)
    after = sorted(smoothed, key=smoothed.__getitem__, reverse=True)[:SCORED_CANDIDATES]
    assert set(after) == set(before)
