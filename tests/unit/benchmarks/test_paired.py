"""`benchmarks.paired`: the paired difference with the order effect balanced out."""

from __future__ import annotations

import random

import pytest

from benchmarks.paired import paired_difference


def _pairs(true_diff: float, gain: float, n: int, seed: int) -> tuple[list, list, list]:
    """Simulated pairs: base slower than this by `true_diff`, the second server faster by
    `gain`, noise shared within a pair (the same request) and a little of each side's own."""
    rng = random.Random(seed)
    base, this, this_first = [], [], []
    for _ in range(n):
        request = rng.uniform(20, 40)
        first = rng.random() < 0.5
        b = request + true_diff - (gain if first else 0.0) + rng.gauss(0, 0.3)
        t = request - (0.0 if first else gain) + rng.gauss(0, 0.3)
        base.append(b)
        this.append(t)
        this_first.append(first)
    return base, this, this_first


@pytest.mark.parametrize("seed", range(5))
def test_the_balanced_difference_recovers_the_true_one_despite_the_order_effect(
    seed: int,
) -> None:
    diff = paired_difference(*_pairs(0.0, 2.75, 241, seed))
    assert abs(diff.balanced) < 0.15
    assert diff.second_gain == pytest.approx(2.75, abs=0.15)
    assert diff.pairs == 241


def test_the_plain_median_is_thrown_by_the_order_effect_when_the_orders_are_unequal() -> None:
    # 60 % of the pairs with `this` first, so the plain median falls into that cluster:
    # this is truly 1 ms faster, and the second server gains 3 ms.
    first = [i % 5 < 3 for i in range(400)]
    request = [20.0 + i % 7 for i in range(400)]
    base = [r + 1.0 - (3.0 if f else 0.0) for r, f in zip(request, first, strict=True)]
    this = [r - (0.0 if f else 3.0) for r, f in zip(request, first, strict=True)]
    diff = paired_difference(base, this, first)
    assert diff.balanced == pytest.approx(1.0) and diff.second_gain == pytest.approx(3.0)
    assert diff.median == pytest.approx(-2.0)


def test_pairs_in_one_order_only_are_refused() -> None:
    with pytest.raises(ValueError, match="both orders"):
        paired_difference([1.0, 2.0], [1.0, 2.0], [True, True])
    with pytest.raises(ValueError, match="one entry per pair"):
        paired_difference([1.0], [1.0, 2.0], [True, False])


def test_the_ab_table_reports_the_balanced_difference_and_the_order_effect() -> None:
    from benchmarks.latency_ab import _order, _rows

    orders = [_order(i)[0] == "this" for i in range(1, 9)]
    assert orders == [True, False] * 4  # the first server alternates, pair by pair
    # this is 1 ms faster; whichever answers second gains 3 ms.
    base = [31.0 - (3.0 if f else 0.0) for f in orders]
    this = [30.0 - (0.0 if f else 3.0) for f in orders]
    rows = {
        r.metric: r.value
        for r in _rows({("100k", "search"): {"base": base, "this": this, "this_first": orders}})
    }
    assert rows["100k search paired base - this, order-balanced"] == "1.0 ms"
    assert rows["100k search answering second gains"] == "3.0 ms"


def test_each_size_and_kind_has_as_many_pairs_in_each_order() -> None:
    from benchmarks.latency_ab import balanced_orders
    from benchmarks.latency_report import Sample

    kinds = ["search", "search", "context", "search", "context", "context", "context"]
    work = [Sample("100k", kind, "u", f"q{i}", {}) for i, kind in enumerate(kinds)]
    orders = balanced_orders(work)
    for kind in ("search", "context"):
        firsts = [o[0] for s, o in zip(work, orders, strict=True) if s.kind == kind]
        assert abs(firsts.count("this") - firsts.count("base")) <= 1
    # Alternating over all requests instead would give the contexts 1 against 3.
    assert [o[0] for s, o in zip(work, orders, strict=True) if s.kind == "context"] == [
        "this",
        "base",
        "this",
        "base",
    ]
