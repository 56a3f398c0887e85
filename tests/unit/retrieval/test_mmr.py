"""MMR diversity, budget cuts and token estimates."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.mmr import cut_to_budget, estimate_tokens, mmr

# a and b are near-duplicates (cosine 0.99), c is orthogonal to both axes' first one
VECTORS = {
    "a": np.array([1.0, 0.0]),
    "b": np.array([0.99, math.sqrt(1 - 0.99**2)]),
    "c": np.array([0.0, 1.0]),
}
RELEVANCE = {"a": 1.0, "b": 0.95, "c": 0.6}


def test_mmr_prefers_diverse_second_item() -> None:
    # after a: gain(b) = .7*.95 - .3*.99 = 0.368; gain(c) = .7*.6 - .3*0 = 0.42 -> c
    # then b: .7*.95 - .3*max(.99, sim(b, c)=0.141) = 0.368 (only one left)
    assert mmr(["a", "b", "c"], RELEVANCE, VECTORS, k=3) == ["a", "c", "b"]


def test_mmr_lambda_one_is_relevance_order() -> None:
    assert mmr(["c", "b", "a"], RELEVANCE, VECTORS, lam=1.0, k=3) == ["a", "b", "c"]


def test_mmr_penalty_is_max_over_all_selected() -> None:
    # 3-D: a = x, b near-duplicate of a (cos .99), c = y, d = z; sim(b, d) = 0.141
    vectors = {
        "a": np.array([1.0, 0.0, 0.0]),
        "b": np.array([0.99, 0.0, math.sqrt(1 - 0.99**2)]),
        "c": np.array([0.0, 1.0, 0.0]),
        "d": np.array([0.0, 0.0, 1.0]),
    }
    relevance = {"a": 1.0, "b": 0.9, "c": 0.6, "d": 0.5}
    # after a: b .63 - .297 = .333, c .42, d .35 -> c
    # after a, c: b .63 - .3*max(.99, 0) = .333 < d .35 - .3*max(0, 0) = .35 -> d
    # (forgetting a, b would score .63 and wrongly come third)
    assert mmr(["a", "b", "c", "d"], relevance, vectors, k=4) == ["a", "c", "d", "b"]


def test_mmr_heavy_diversity_flips_close_calls() -> None:
    # lam = 0.9: gain(b) = .855 - .1*.99 = 0.756 > gain(c) = .54 -> b stays second
    assert mmr(["a", "b", "c"], RELEVANCE, VECTORS, lam=0.9, k=2) == ["a", "b"]


def test_mmr_missing_vector_means_no_similarity() -> None:
    # b has no vector: gain(b) = .7*.95 = 0.665 > gain(c) = 0.42
    vectors = {"a": VECTORS["a"], "c": VECTORS["c"]}
    assert mmr(["a", "b", "c"], RELEVANCE, vectors, k=3) == ["a", "b", "c"]
    assert mmr(["a", "b"], RELEVANCE, {}, k=2) == ["a", "b"]


def test_mmr_limits_and_edges() -> None:
    assert mmr(["a", "b", "c"], RELEVANCE, VECTORS, k=1) == ["a"]
    assert mmr(["a", "b", "c"], RELEVANCE, VECTORS, k=0) == []
    assert mmr([], RELEVANCE, VECTORS, k=5) == []
    assert mmr(["a", "a", "c"], RELEVANCE, VECTORS, k=5) == ["a", "c"]  # duplicates dropped
    # missing relevance counts 0: z (no vector) loses to c
    assert mmr(["z", "c"], RELEVANCE, VECTORS, k=2) == ["c", "z"]
    # ties resolve to input order
    assert mmr(["y", "x"], {"x": 0.5, "y": 0.5}, {}, k=2) == ["y", "x"]
    with pytest.raises(ValueError):
        mmr(["a"], RELEVANCE, VECTORS, lam=1.5, k=1)


def test_cut_to_budget_skips_what_does_not_fit() -> None:
    # 5 fits (5); 8 would make 13 > 10, skipped; 3 fits (8); 4 would make 12, skipped
    assert cut_to_budget([5, 8, 3, 4], cost=lambda x: x, max_tokens=10) == [5, 3]
    assert cut_to_budget([5, 5], cost=lambda x: x, max_tokens=10) == [5, 5]  # exactly full
    assert cut_to_budget([5], cost=lambda x: x, max_tokens=0) == []
    assert cut_to_budget([0, 0], cost=lambda x: x, max_tokens=0) == [0, 0]


def test_cut_to_budget_negative_cost_raises() -> None:
    with pytest.raises(ValueError):
        cut_to_budget([-1], cost=lambda x: x, max_tokens=10)


@given(st.lists(st.integers(min_value=0, max_value=500)), st.integers(-10, 2000))
def test_cut_to_budget_never_exceeds(costs: list[int], budget: int) -> None:
    kept = cut_to_budget(costs, cost=lambda x: x, max_tokens=budget)
    assert sum(kept) <= max(budget, 0)
    # greedy: every skipped item truly did not fit at the moment it was considered
    used = 0
    for item in costs:
        if used + item <= budget:
            used += item
    assert sum(kept) == used


def test_estimate_tokens_hand_computed() -> None:
    assert estimate_tokens("") == 0
    # 2 words -> ceil(2.6) = 3; 11 chars -> ceil(2.75) = 3
    assert estimate_tokens("hello world") == 3
    # 10 one-letter words -> 10*1.3 = 13 exactly; 19 chars -> 5
    assert estimate_tokens(" ".join("a" * 10)) == 13
    # one 40-char word: ceil(1.3) = 2 vs 40/4 = 10
    assert estimate_tokens("x" * 40) == 10
    # 4 CJK chars, one word: 4 non-ASCII count 1 each -> 4 (chars/4 alone would say 1)
    assert estimate_tokens("你好世界") == 4
    # "café": 3 ASCII/4 + 1 = 1.75 -> 2
    assert estimate_tokens("café") == 2


def test_estimate_tokens_never_below_brief_formula() -> None:
    rng = random.Random(5)
    alphabet = "abc de  fg\n\té你😀"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        floor = math.ceil(max(len(text.split()) * 1.3, len(text) / 4) - 1e-9)
        assert estimate_tokens(text) >= floor


def test_estimate_tokens_counts_each_non_ascii_character_once() -> None:
    rng = random.Random(11)
    alphabet = "ab c\u007f\u0080é你😀\udc80"  # the ASCII edge, a lone surrogate
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        non_ascii = sum(1 for ch in text if ord(ch) > 127)
        by_chars = (len(text) - non_ascii + 4 * non_ascii + 3) // 4
        by_words = (len(text.split()) * 13 + 9) // 10
        assert estimate_tokens(text) == max(by_words, by_chars)
