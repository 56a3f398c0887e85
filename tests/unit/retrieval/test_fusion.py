"""Normalisation, fusion and BM25 against hand-computed values."""

from __future__ import annotations

import math

import pytest

from memory.retrieval.fusion import bm25_scores, fuse, minmax, to_relevance, zscore

Z = 1.224745  # (3 - 2) / sqrt(2/3): z of 3 in {1, 2, 3}


def approx_dict(expected: dict[str, float]) -> object:
    return pytest.approx(expected, abs=1e-6)


def test_zscore() -> None:
    # mean 2, population std sqrt((1 + 0 + 1)/3) = 0.816497
    assert zscore({"a": 1.0, "b": 2.0, "c": 3.0}) == approx_dict({"a": -Z, "b": 0.0, "c": Z})


def test_zscore_degenerate() -> None:
    assert zscore({}) == {}
    assert zscore({"a": 5.0}) == {"a": 0.0}
    assert zscore({"a": 2.0, "b": 2.0}) == {"a": 0.0, "b": 0.0}


def test_zscore_min_spread_keeps_noise_small() -> None:
    # Cosines within 0.02 of each other: without a floor the top one is +1.22 sd.
    noise = {"a": 0.05, "b": 0.06, "c": 0.07}
    assert zscore(noise)["c"] == pytest.approx(Z)
    assert zscore(noise, min_spread=0.04)["c"] == pytest.approx(0.01 / 0.04)
    # A floor below the spread changes nothing.
    assert zscore(noise, min_spread=0.001) == approx_dict(zscore(noise))


def test_a_route_whose_candidates_tie_still_lifts_them() -> None:
    # One note holds the query's only rare term: the route's single answer is +1 against
    # the -1 of every note it did not return (as z-scores of {s, 0}), not 0 like them.
    got = fuse({"bm25": {"log": 14.9}, "dense": {"a": 0.2, "b": 0.4, "log": 0.3}})
    assert got["log"] == pytest.approx(1.0 + 0.0)
    assert got["a"] == pytest.approx(-1.0 - Z) and got["b"] == pytest.approx(-1.0 + Z)
    assert max(got, key=got.__getitem__) == "log"


def test_fuse_applies_each_routes_min_spread() -> None:
    routes = {"dense": {"x": 0.05, "y": 0.07}, "bm25": {"y": 1.0, "z": 3.0}}
    plain = fuse(routes)
    floored = fuse(routes, min_spreads={"dense": 0.04})
    assert plain["y"] - plain["x"] == pytest.approx(2.0 + 0.0)  # dense ±1, bm25 absent -1
    assert floored["y"] - floored["x"] == pytest.approx(0.5)  # ±0.25 against 0.04


def test_minmax() -> None:
    # (x - 2) / (6 - 2)
    assert minmax({"a": 2.0, "b": 4.0, "c": 6.0}) == {"a": 0.0, "b": 0.5, "c": 1.0}
    assert minmax({"a": 3.0}) == {"a": 1.0}
    assert minmax({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}
    assert minmax({}) == {}


def test_non_finite_scores_raise() -> None:
    with pytest.raises(ValueError):
        zscore({"a": math.nan})
    with pytest.raises(ValueError):
        fuse({"r": {"a": math.inf}})


ROUTES = {"r1": {"a": 1.0, "b": 2.0, "c": 3.0}, "r2": {"b": 10.0, "d": 20.0}}


def test_fuse_zscore_absent_gets_route_minimum() -> None:
    # r1 z: a -Z, b 0, c +Z, absent d -> min = -Z
    # r2 z: mean 15, std 5 -> b -1, d +1, absent a, c -> min = -1
    expected = {"a": -Z - 1, "b": -1.0, "c": Z - 1, "d": -Z + 1}
    assert fuse(ROUTES) == approx_dict(expected)


def test_fuse_weights() -> None:
    # r2 counts double; r1 unnamed -> weight 1
    expected = {"a": -Z - 2, "b": -2.0, "c": Z - 2, "d": -Z + 2}
    assert fuse(ROUTES, weights={"r2": 2.0}) == approx_dict(expected)
    # weight 0 removes a route
    assert fuse(ROUTES, weights={"r2": 0.0}) == approx_dict({"a": -Z, "b": 0, "c": Z, "d": -Z})


def test_fuse_minmax_absent_gets_zero() -> None:
    # r1: a 0, b .5, c 1; r2: b 0, d 1
    expected = {"a": 0.0, "b": 0.5, "c": 1.0, "d": 1.0}
    assert fuse(ROUTES, method="minmax") == approx_dict(expected)


def test_fuse_rrf() -> None:
    # r1 ranks c1 b2 a3; r2 ranks d1 b2; 1/(60 + rank), absent 0
    expected = {"a": 1 / 63, "b": 2 / 62, "c": 1 / 61, "d": 1 / 61}
    assert fuse(ROUTES, method="rrf") == approx_dict(expected)
    # k = 1: b = 1/3 + 1/3
    assert fuse(ROUTES, method="rrf", rrf_k=1)["b"] == pytest.approx(2 / 3)


def test_rrf_ties_share_rank() -> None:
    # x, y tie at rank 1; z is rank 3 (competition ranking)
    got = fuse({"r": {"x": 5.0, "y": 5.0, "z": 1.0}}, method="rrf")
    assert got == approx_dict({"x": 1 / 61, "y": 1 / 61, "z": 1 / 63})


def test_fuse_skips_empty_routes_and_keeps_union() -> None:
    got = fuse({"empty": {}, "r": {"a": 1.0, "b": 3.0}})
    assert got == approx_dict({"a": -1.0, "b": 1.0})  # mean 2, std 1
    assert fuse({}) == {}


def test_fuse_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        fuse(ROUTES, weights={"r1": -1.0})
    with pytest.raises(ValueError):
        fuse(ROUTES, method="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        fuse(ROUTES, method="rrf", rrf_k=0)


def test_fuse_does_not_mutate_input() -> None:
    routes = {"r1": {"a": 1.0, "b": 2.0}}
    fuse(routes)
    assert routes == {"r1": {"a": 1.0, "b": 2.0}}


def test_to_relevance() -> None:
    assert to_relevance({"a": -2.0, "b": 0.0, "c": 2.0}) == {"a": 0.0, "b": 0.5, "c": 1.0}
    assert to_relevance({"only": -7.3}) == {"only": 1.0}
    assert to_relevance({}) == {}


# BM25 example: collection N = 4, avgdl = 3; df(cat) = 2, df(dog) = 1
DOCS = {"d1": ["cat", "sat"], "d2": ["dog", "dog", "cat", "ran"], "d3": ["bird"]}
STATS = {"doc_freq": {"cat": 2, "dog": 1, "bird": 1}, "n_docs": 4, "avg_len": 3.0}


def test_bm25_hand_computed() -> None:
    # idf(cat) = ln(1 + (4-2+.5)/(2+.5)) = ln 2 = 0.693147
    # idf(dog) = ln(1 + (4-1+.5)/(1+.5)) = ln(10/3) = 1.203973
    # d1 (len 2): K = 1.2*(.25 + .75*2/3) = 0.9; cat: 1*2.2/(1+0.9) = 1.157895
    #   score = 0.693147 * 1.157895 = 0.802591
    # d2 (len 4): K = 1.2*(.25 + .75*4/3) = 1.5
    #   cat: 2.2/2.5 = 0.88 -> 0.609970; dog: 2*2.2/3.5 = 1.257143 -> 1.513566
    #   score = 2.123536
    # d3: no query term -> 0
    got = bm25_scores(["dog", "cat"], DOCS, **STATS)  # type: ignore[arg-type]
    assert got == approx_dict({"d1": 0.802591, "d2": 2.123536, "d3": 0.0})


def test_bm25_repeated_query_term_counts_once() -> None:
    once = bm25_scores(["dog", "cat"], DOCS, **STATS)  # type: ignore[arg-type]
    twice = bm25_scores(["dog", "cat", "dog"], DOCS, **STATS)  # type: ignore[arg-type]
    assert once == twice


def test_bm25_parameters() -> None:
    # b = 0 disables length normalisation: d1 cat: 1*2.2/(1+1.2) = 1 -> score = ln 2
    got = bm25_scores(["cat"], DOCS, b=0.0, **STATS)  # type: ignore[arg-type]
    assert got["d1"] == pytest.approx(math.log(2), abs=1e-9)
    # unknown term: df 0, idf = ln(1 + 4.5/0.5) = ln 10; d: len 1, avgdl 3, K=1.2*(.25+.25)=.6
    #   1*2.2/1.6 = 1.375 -> 1.375 * 2.302585 = 3.166054
    got = bm25_scores(["owl"], {"d": ["owl"]}, **STATS)  # type: ignore[arg-type]
    assert got["d"] == pytest.approx(3.166054, abs=1e-6)


def test_bm25_stale_stats_never_negative() -> None:
    # df above N would give a negative idf; clamped to N: ln(1 + 0.5/4.5) = 0.105361
    got = bm25_scores(["cat"], {"d": ["cat"]}, doc_freq={"cat": 9}, n_docs=4, avg_len=0.0)
    # avg_len 0 -> no length normalisation: 2.2/2.2 = 1
    assert got["d"] == pytest.approx(0.105361, abs=1e-6)
