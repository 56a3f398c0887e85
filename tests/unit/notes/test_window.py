"""Window vectors derived from neighbour turns' embeddings (no embedder call)."""

from __future__ import annotations

import numpy as np
import pytest

from memory.notes.window import (
    TURNS_EACH_SIDE,
    WINDOW_WEIGHTS,
    _affected,
    window_vector,
)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_window_is_the_normalised_weighted_sum_nearest_first() -> None:
    own, b1, b2, a1, a2 = (unit(i) for i in range(5))
    expected = (
        WINDOW_WEIGHTS[0] * own + WINDOW_WEIGHTS[1] * (b1 + a1) + WINDOW_WEIGHTS[2] * (b2 + a2)
    )
    expected /= np.linalg.norm(expected)
    window = window_vector(own, [b1, b2], [a1, a2])
    assert window.dtype == np.float32
    np.testing.assert_allclose(window, expected, atol=1e-6)
    assert np.linalg.norm(window) == pytest.approx(1.0, abs=1e-6)


def test_nearest_neighbour_weighs_more_than_the_farther_one() -> None:
    own, near, far = unit(1), unit(2), unit(3)
    window = window_vector(own, [near, far], [])
    assert float(window @ own) > float(window @ near) > float(window @ far)


def test_missing_neighbours_add_nothing() -> None:
    own, b1 = unit(7), unit(8)
    np.testing.assert_allclose(window_vector(own, [], []), own, atol=1e-6)
    alone_before = window_vector(own, [b1], [])
    expected = WINDOW_WEIGHTS[0] * own + WINDOW_WEIGHTS[1] * b1
    np.testing.assert_allclose(alone_before, expected / np.linalg.norm(expected), atol=1e-6)


def test_only_the_configured_number_of_turns_per_side_is_used() -> None:
    own, *side = (unit(i) for i in range(10, 15))
    assert (
        window_vector(own, side, []).tolist()
        == window_vector(own, side[:TURNS_EACH_SIDE], []).tolist()
    )


@pytest.mark.parametrize(
    ("turns", "seeds", "expected"),
    [
        # a new last turn refreshes itself and the two turns before it
        ([10, 20, 30, 40, 50], {50}, {2, 3, 4}),
        # a seed in the middle: two turns on each side
        ([10, 20, 30, 40, 50, 60, 70], {40}, {1, 2, 3, 4, 5}),
        # a seed whose own turn has no note any more (merged away): its neighbours only
        ([10, 20, 40, 50], {30}, {0, 1, 2, 3}),
        ([10, 20], {5}, {0, 1}),
    ],
)
def test_affected_turns(turns: list[int], seeds: set[int], expected: set[int]) -> None:
    assert _affected(turns, frozenset(seeds)) == expected
