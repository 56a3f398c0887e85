"""The learned sparse channel's arithmetic (`memory.retrieval.sparse.sparse_boosts`),
against values computed by hand."""

from __future__ import annotations

import math

import pytest

from memory.retrieval.sparse import resolve_sparse_query, sparse_boosts


def test_boosts_are_weight_times_spread_times_the_summed_z_scores() -> None:
    scores = {"a": 3.0, "b": 1.0, "c": 2.0}  # mean 2, population std sqrt(2/3)
    own = {"a": 0.0, "b": 2.0, "c": 1.0}  # z: -1.2247, 1.2247, 0
    window = {"a": 1.0, "b": 1.0, "c": 4.0}  # mean 2, std sqrt(2): z -0.7071, -0.7071, 1.4142
    boosts = sparse_boosts(scores, own, window, 0.1)
    spread = math.sqrt(2 / 3)
    z_own = {"a": -math.sqrt(1.5), "b": math.sqrt(1.5), "c": 0.0}
    z_window = {"a": -1 / math.sqrt(2), "b": -1 / math.sqrt(2), "c": math.sqrt(2)}
    for key in scores:
        assert boosts[key] == pytest.approx(0.1 * spread * (z_own[key] + z_window[key]))
    assert boosts["b"] > 0 > boosts["a"]  # the query's terms are in b, not in a
    assert sum(boosts.values()) == pytest.approx(0.0, abs=1e-12)  # z-scores sum to zero


def test_a_note_without_an_inner_product_is_neutral_and_the_others_keep_their_order() -> None:
    scores = {"a": 1.0, "b": 2.0, "c": 3.0}
    boosts = sparse_boosts(scores, {"a": 1.0, "b": 3.0, "c": None}, {"a": 1.0, "b": 3.0}, 0.5)
    assert boosts["c"] == 0.0
    spread = math.sqrt(2 / 3)
    assert boosts["b"] == pytest.approx(0.5 * spread * 2.0)  # z = +1 in both channels
    assert boosts["a"] == pytest.approx(-0.5 * spread * 2.0)


@pytest.mark.parametrize(
    ("scores", "own", "weight"),
    [
        ({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, 0.0),  # switched off
        ({"a": 1.0}, {"a": 5.0}, 0.1),  # one candidate: no spread
        ({"a": 1.0, "b": 2.0}, {"a": None, "b": None}, 0.1),  # no vectors
        ({"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 3.0}, 0.1),  # equal products: no information
    ],
)
def test_nothing_is_added_without_information(
    scores: dict[str, float], own: dict[str, float | None], weight: float
) -> None:
    assert sparse_boosts(scores, own, own, weight) == dict.fromkeys(scores, 0.0)


def test_an_infinite_score_neither_moves_nor_spoils_the_spread() -> None:
    scores = {"a": 1.0, "b": 3.0, "lost": -math.inf}
    values = {"a": 1.0, "b": 2.0, "lost": 9.0}
    boosts = sparse_boosts(scores, values, values, 0.1)
    assert boosts["lost"] == 0.0
    assert all(math.isfinite(v) for v in boosts.values())
    assert boosts["b"] > 0 > boosts["a"]


def test_a_pending_query_is_waited_for_and_a_ready_one_passed_through() -> None:
    from concurrent.futures import Future

    future: Future[str | None] = Future()
    future.set_result("{1:0.5}/30522")
    assert resolve_sparse_query(future) == "{1:0.5}/30522"
    assert resolve_sparse_query("{2:1}/30522") == "{2:1}/30522"
    assert resolve_sparse_query(None) is None
