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


def _row(turn: int, visibility: str, word: str, *, domain: str = "general", agent: str = "w"):
    import uuid
    from datetime import UTC, datetime

    from memory.access.audience import Audience
    from memory.notes.window_rows import WindowRow

    return WindowRow(
        id=uuid.UUID(int=turn),
        turn_seq=turn,
        tenant_id="t",
        user_id="u",
        status="active",
        audience=Audience(visibility, domain, agent),
        line=f"Alice: {word}",
        occurred_at=datetime(2023, 5, 8, tzinfo=UTC),
        embedding=unit(turn),
        window_embedding=None,
        window_text=None,
        window_readers=None,
    )


def _lines(window_text: str) -> list[str]:
    """The window's lines without the date words that end it."""
    return window_text.removesuffix(" 8 May 2023 May 2023 Monday").split("\n")


def test_a_window_holds_only_the_neighbours_that_may_join_it() -> None:
    from memory.notes.window import _Turns

    rows = [
        _row(1, "open", "kayak"),
        _row(2, "user-only", "hypertension"),
        _row(3, "open", "lunch"),
        _row(4, "private", "4471", agent="x"),
        _row(5, "scoped", "budget", domain="finance", agent="x"),
    ]
    turns = _Turns(rows)
    vector, (text, readers) = turns.window(2, rows[2])  # the open note of turn 3
    assert _lines(text) == ["Alice: lunch", "Alice: kayak"] and readers is None
    # The hidden turns keep their places: only turn 1 (the second turn before) is blended.
    expected = window_vector(rows[2].embedding, [None, rows[0].embedding], [None, None])
    np.testing.assert_allclose(vector, expected, atol=1e-6)
    # The user-only note may hold everything of its user, nearest first.
    _, (private_text, readers) = turns.window(1, rows[1])
    assert _lines(private_text) == [
        "Alice: hypertension",
        "Alice: kayak",
        "Alice: lunch",
        "Alice: 4471",
    ]
    assert readers is None
    # x's scoped note: open neighbours and x's own private note, which only x may rank by.
    _, (scoped_text, readers) = turns.window(4, rows[4])
    assert _lines(scoped_text) == ["Alice: budget", "Alice: 4471", "Alice: lunch"]
    assert readers == ["x"]


def test_two_authors_of_one_turn_get_windows_of_their_own() -> None:
    """Open notes of two agents in one turn: each window may hold its own author's
    private neighbour (and names that author alone), never the other's."""
    from memory.notes.window import _Turns

    rows = [
        _row(1, "private", "mine", agent="a"),
        _row(2, "open", "hello", agent="a"),
        _row(3, "private", "theirs", agent="b"),
    ]
    b_open = _row(2, "open", "hi", agent="b")
    b_open = type(b_open)(**{**b_open.__dict__, "id": b_open.id.__class__(int=99)})
    turns = _Turns([*rows, b_open])
    _, (a_text, a_readers) = turns.window(1, rows[1])
    _, (b_text, b_readers) = turns.window(1, b_open)
    assert "mine" in a_text and "theirs" not in a_text and a_readers == ["a"]
    assert "theirs" in b_text and "mine" not in b_text and b_readers == ["b"]
