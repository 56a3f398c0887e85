"""The difference between two servers answering the same requests in pairs.

Why not only the plain median of the paired differences: whichever server answers
second finds the pages the first one just read (PostgreSQL's buffers, the page cache),
so it is faster by an order effect (3.9-5.7 ms at 100k notes in the A/A runs of
`benchmarks/results/latency-ab-s32-aa-*.json`). The order alternates, so the differences
form two clusters, one each side of the true difference, and the plain median is pulled
toward whichever order had more pairs (before 5549906 the order alternated over all
requests, not within each size and kind: 67 against 83 pairs in one group). With the
orders unequal, A/A runs read up to 1.5 ms at 100k with 150 pairs; with them balanced,
one run read every difference within 0.4 (`latency-ab-s32-aa-balanced.json`).

Invariant: `balanced` is the mean of the two order-conditional medians, so an order
effect of any size that is the same for both servers cancels in it; `second_gain` is
half their spread, the order effect itself.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedDifference:
    median: float  # median of base - this over every pair (the figure quoted before d9d060d)
    balanced: float  # mean of the medians of base - this with each server first
    second_gain: float  # how much faster a server is when it answers second
    pairs: int


def paired_difference(
    base: list[float], this: list[float], this_first: list[bool]
) -> PairedDifference:
    """base - this (ms), per pair i: `base[i]`, `this[i]`, and whether `this` went first.
    Positive: this is faster. Needs at least one pair in each order."""
    if not len(base) == len(this) == len(this_first):
        raise ValueError("base, this and this_first must have one entry per pair")
    diffs = [b - t for b, t in zip(base, this, strict=True)]
    this_led = [d for d, first in zip(diffs, this_first, strict=True) if first]
    base_led = [d for d, first in zip(diffs, this_first, strict=True) if not first]
    if not this_led or not base_led:
        raise ValueError("need pairs in both orders to balance the order effect")
    # With `this` first, base answers second and gains: base - this = true - gain.
    lead_this, lead_base = statistics.median(this_led), statistics.median(base_led)
    return PairedDifference(
        median=statistics.median(diffs),
        balanced=(lead_this + lead_base) / 2,
        second_gain=(lead_base - lead_this) / 2,
        pairs=len(diffs),
    )
