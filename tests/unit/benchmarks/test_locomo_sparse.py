"""The LoCoMo sparse trials' window and inner product of sparse vectors."""

from __future__ import annotations

import pytest

from benchmarks.locomo_sparse import sparse_dot, window_max


def test_a_window_keeps_each_terms_largest_weight_and_dots_are_sparse() -> None:
    window = window_max([{1: 0.5, 2: 1.0}, {2: 0.25, 3: 2.0}, {}])
    assert window == {1: 0.5, 2: 1.0, 3: 2.0}
    assert sparse_dot({1: 2.0, 9: 1.0}, window) == pytest.approx(1.0)
    assert sparse_dot({}, window) == 0.0
