"""ACT-R activation and retention against hand-computed values (arithmetic in comments)."""

from __future__ import annotations

import math
import random
import statistics
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.activation.model import (
    NO_ACCESS_BASE_LEVEL,
    ActivationBreakdown,
    activation,
    base_level,
    break_ties_by_noise,
    grow_half_life,
    initial_half_life,
    logistic_noise,
    make_noise_rng,
    ranked_base_level,
    record_access,
    retention,
    score_activation,
    spreading,
)
from memory.config import ActivationSettings

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


class StubRng:
    """Returns fixed uniforms in turn, to pin the inverse-CDF arithmetic."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


# --- base level ------------------------------------------------------------------------


def test_single_access_one_hour_ago_is_zero() -> None:
    # B = ln(1^-0.5) = ln 1 = 0
    assert base_level([ago(1)], NOW) == pytest.approx(0.0, abs=1e-12)


def test_two_accesses() -> None:
    # B = ln(1^-0.5 + 4^-0.5) = ln(1 + 0.5) = ln 1.5 = 0.405465
    assert base_level([ago(1), ago(4)], NOW) == pytest.approx(0.405465, abs=1e-6)


def test_brand_new_note_uses_one_second_floor() -> None:
    # t = 1 s = 1/3600 h; B = ln((1/3600)^-0.5) = ln 60 = 4.094345
    assert base_level([NOW], NOW) == pytest.approx(4.094345, abs=1e-6)


def test_future_timestamp_clamps_to_floor() -> None:
    # a clock-skewed access 2 h in the future counts as 1 s old: ln 60 again
    assert base_level([NOW + timedelta(hours=2)], NOW) == pytest.approx(4.094345, abs=1e-6)


def test_thirty_seconds_is_above_floor() -> None:
    # t = 30/3600 = 1/120 h; B = ln(120^0.5) = ln(120)/2 = 4.787492/2 = 2.393746
    assert base_level([NOW - timedelta(seconds=30)], NOW) == pytest.approx(2.393746, abs=1e-6)


def test_other_decay() -> None:
    # d = 1/3, t = 8 h: 8^(-1/3) = 0.5, B = ln 0.5 = -0.693147
    assert base_level([ago(8)], NOW, decay=1 / 3) == pytest.approx(-0.693147, abs=1e-6)


def test_no_access_is_minus_infinity() -> None:
    assert base_level([], NOW) == NO_ACCESS_BASE_LEVEL == float("-inf")


@pytest.mark.parametrize("decay", [0.0, 1.0, -0.5])
def test_decay_out_of_range(decay: float) -> None:
    with pytest.raises(ValueError):
        base_level([ago(1)], NOW, decay=decay)


def test_petrov_small_case() -> None:
    # stored k=1 at t_k=1 h, n=3, first access t_n=9 h, d=0.5:
    # tail = (3-1)*(9^0.5 - 1^0.5) / (0.5*(9-1)) = 2*2/4 = 1
    # B = ln(1^-0.5 + 1) = ln 2 = 0.693147
    b = base_level([ago(1)], NOW, total_count=3, first_access=ago(9))
    assert b == pytest.approx(0.693147, abs=1e-6)


def test_petrov_other_decay() -> None:
    # d = 1/3 (so 1 - d differs from d): stored t_k = 1 h, n = 2, first t_n = 8 h
    # tail = 1*(8^(2/3) - 1^(2/3)) / ((2/3)*(8-1)) = (4-1)/(14/3) = 9/14 = 0.642857
    # B = ln(1 + 0.642857) = 0.496437
    b = base_level([ago(1)], NOW, decay=1 / 3, total_count=2, first_access=ago(8))
    assert b == pytest.approx(0.496437, abs=1e-6)


def test_petrov_closed_interval_limit() -> None:
    # first access as old as the oldest stored (t_n = t_k = 4 h): tail = 2 * 4^-0.5 = 1
    # B = ln(0.5 + 1) = ln 1.5 = 0.405465
    b = base_level([ago(4)], NOW, total_count=3, first_access=ago(4))
    assert b == pytest.approx(0.405465, abs=1e-6)


def test_petrov_against_exact_sum_for_100_uniform_accesses() -> None:
    # accesses every 2 h, ages 1, 3, ..., 199 h; exact Σ t^-0.5 = 13.714422 → B = 2.618448
    ages = [1 + 2 * i for i in range(100)]
    exact = base_level([ago(a) for a in ages], NOW)
    assert exact == pytest.approx(2.618448, abs=1e-6)
    # keep the 50 most recent (ages 1..99) + count 100 + first access at 199 h
    approx = base_level([ago(a) for a in ages[:50]], NOW, total_count=100, first_access=ago(199))
    assert math.exp(approx) == pytest.approx(math.exp(exact), rel=0.02)
    # and the approximation must matter: the 50 stored alone sum to 9.57, 30 % short
    truncated = base_level([ago(a) for a in ages[:50]], NOW)
    assert math.exp(truncated) < 0.75 * math.exp(exact)


def test_petrov_needs_first_access() -> None:
    with pytest.raises(ValueError):
        base_level([ago(1)], NOW, total_count=5)


def test_total_count_not_above_stored_is_ignored() -> None:
    assert base_level([ago(1), ago(4)], NOW, total_count=2) == pytest.approx(0.405465, abs=1e-6)


# --- spreading, activation -------------------------------------------------------------


def test_spreading() -> None:
    assert spreading(0.5) == pytest.approx(5.5)  # 11 * 0.5
    assert spreading(0.5, link_spread=0.25) == pytest.approx(5.75)  # 5.5 + 0.25
    assert spreading(0.2, weight=2.0) == pytest.approx(0.4)  # 2 * 0.2
    assert spreading(1.5) == pytest.approx(11.0)  # clamped to 1
    assert spreading(-0.2) == 0.0  # clamped to 0


def test_spreading_nan_raises() -> None:
    with pytest.raises(ValueError):
        spreading(float("nan"))


def test_activation_sums() -> None:
    assert activation(1.0, 2.0, 0.5) == 3.5


# --- noise -----------------------------------------------------------------------------


def test_noise_inverse_cdf_values() -> None:
    # s = 1.2*sqrt(3)/pi = 0.661595; u = 0.75: s*ln(0.75/0.25) = s*ln 3 = 0.726836
    assert logistic_noise(StubRng(0.75)) == pytest.approx(0.726836, abs=1e-6)
    assert logistic_noise(StubRng(0.25)) == pytest.approx(-0.726836, abs=1e-6)
    assert logistic_noise(StubRng(0.5)) == 0.0  # ln 1
    # stddev 2.4 doubles the scale: 1.453672
    assert logistic_noise(StubRng(0.75), stddev=2.4) == pytest.approx(1.453672, abs=1e-6)


def test_noise_redraws_zero_uniform() -> None:
    assert logistic_noise(StubRng(0.0, 0.75)) == pytest.approx(0.726836, abs=1e-6)


def test_noise_off() -> None:
    assert logistic_noise(None) == 0.0
    assert logistic_noise(StubRng(0.75), stddev=0.0) == 0.0
    with pytest.raises(ValueError):
        logistic_noise(StubRng(0.75), stddev=-1.0)


def test_noise_seeded_determinism() -> None:
    first = [logistic_noise(rng) for rng in [make_noise_rng(42)] for _ in range(5)]
    again = [logistic_noise(rng) for rng in [make_noise_rng(42)] for _ in range(5)]
    other = [logistic_noise(rng) for rng in [make_noise_rng(43)] for _ in range(5)]
    assert first == again
    assert first != other
    assert len(set(first)) == 5  # one generator gives a fresh draw each call


def test_noise_moments_over_100k_draws() -> None:
    # standard error of the mean: 1.2/sqrt(1e5) = 0.0038; of the stddev about 0.0035
    rng = make_noise_rng(2024)
    draws = [logistic_noise(rng) for _ in range(100_000)]
    assert statistics.fmean(draws) == pytest.approx(0.0, abs=0.02)
    assert statistics.stdev(draws) == pytest.approx(1.2, abs=0.025)


def test_noise_accepts_numpy_generator() -> None:
    gen = np.random.default_rng(7)
    draws = [logistic_noise(gen) for _ in range(20_000)]
    assert statistics.stdev(draws) == pytest.approx(1.2, abs=0.05)
    assert [logistic_noise(np.random.default_rng(7)) for _ in range(1)] == draws[:1]


# --- retention and half-life -----------------------------------------------------------


def test_retention() -> None:
    assert retention(ago(168), NOW, 168.0) == pytest.approx(0.5)  # 2^-1
    assert retention(ago(336), NOW, 168.0) == pytest.approx(0.25)  # 2^-2
    assert retention(ago(84), NOW, 168.0) == pytest.approx(0.707107, abs=1e-6)  # 2^-0.5
    assert retention(NOW, NOW, 168.0) == 1.0
    assert retention(NOW + timedelta(hours=5), NOW, 168.0) == 1.0  # future clamps


def test_retention_rejects_non_positive_half_life() -> None:
    with pytest.raises(ValueError):
        retention(ago(1), NOW, 0.0)


def test_initial_half_life() -> None:
    settings = ActivationSettings()
    assert initial_half_life("stable", settings) == 672.0  # 168 * 4
    assert initial_half_life("ephemeral", settings) == 42.0  # 168 * 0.25
    assert initial_half_life("episodic", settings) == 168.0  # 168 * 1
    assert initial_half_life("unknown-kind", settings) == 168.0  # default multiplier 1


def test_grow_half_life() -> None:
    mult = ActivationSettings().kind_half_life_multipliers
    assert grow_half_life(168.0, growth=1.5, kind="episodic", multipliers=mult) == 252.0
    # ephemeral cap = 8760 * 0.25 = 2190: 2000 * 1.5 = 3000 is capped
    assert grow_half_life(2000.0, growth=1.5, kind="ephemeral", multipliers=mult) == 2190.0
    # already above its cap: never shrinks
    assert grow_half_life(3000.0, growth=1.5, kind="ephemeral", multipliers=mult) == 3000.0
    assert grow_half_life(100.0, growth=2.0, kind="x", multipliers=mult, max_hours=150.0) == 150.0


def test_grow_half_life_stays_finite() -> None:
    mult = {"stable": 4.0}
    h = 672.0
    for _ in range(5000):
        h = grow_half_life(h, growth=1.5, kind="stable", multipliers=mult)
    assert h == 8760.0 * 4.0


def test_grow_half_life_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        grow_half_life(168.0, growth=0.9, kind="episodic", multipliers={})
    with pytest.raises(ValueError):
        grow_half_life(0.0, growth=1.5, kind="episodic", multipliers={})


# --- record_access ---------------------------------------------------------------------


def test_record_access_first_is_creation() -> None:
    assert record_access([], 0, None, NOW) == ([NOW], 1, NOW)


def test_record_access_keeps_last_50() -> None:
    history = [ago(100 - i) for i in range(50)]  # ages 100..51 h, oldest first
    before = list(history)
    times, count, first = record_access(history, 50, ago(100), NOW)
    assert history == before  # input not mutated
    assert len(times) == 50
    assert times[0] == ago(99)  # the oldest (100 h) fell off
    assert times[-1] == NOW
    assert count == 51
    assert first == ago(100)  # first access survives the truncation


def test_record_access_out_of_order() -> None:
    times, count, first = record_access([ago(10), ago(2)], 2, ago(10), ago(5))
    assert times == [ago(10), ago(5), ago(2)]
    assert count == 3
    assert first == ago(10)
    # an access older than the recorded first becomes the first
    _, _, first = record_access([ago(2)], 1, ago(2), ago(20))
    assert first == ago(20)
    # an inconsistent count never falls below the stored history
    assert record_access([ago(3), ago(2)], 0, None, NOW)[1] == 3


# --- score_activation ------------------------------------------------------------------


def test_score_activation_without_noise() -> None:
    settings = ActivationSettings()
    # B = ln(1^-0.5) = 0; S = 11 * 0.5 = 5.5; rng None → ε = 0; R = 2^(-1/1) = 0.5
    got = score_activation(
        access_times=[ago(1)], now=NOW, relevance=0.5, half_life_hours=1.0, settings=settings
    )
    assert got == ActivationBreakdown(
        base_level=pytest.approx(0.0, abs=1e-12),  # type: ignore[arg-type]
        spreading=5.5,
        noise=0.0,
        total=pytest.approx(5.5),  # type: ignore[arg-type]
        retention=0.5,
        threshold_passed=True,
    )


def test_score_activation_below_threshold() -> None:
    settings = ActivationSettings()
    # B = ln(4^-0.5) = ln 0.5 = -0.693147; S = 0 → A < 0 = retrieval_threshold
    got = score_activation(
        access_times=[ago(4)], now=NOW, relevance=0.0, half_life_hours=168.0, settings=settings
    )
    assert got.total == pytest.approx(-0.693147, abs=1e-6)
    assert not got.threshold_passed
    # a lower threshold lets it through: -0.69 >= -1
    lower = ActivationSettings(retrieval_threshold=-1.0)
    got = score_activation(
        access_times=[ago(4)], now=NOW, relevance=0.0, half_life_hours=168.0, settings=lower
    )
    assert got.threshold_passed


def test_score_activation_noise_switch() -> None:
    on = ActivationSettings(noise_enabled=True, noise_ties_only=False)
    off = ActivationSettings(noise_enabled=False)
    kwargs = {"access_times": [ago(1)], "now": NOW, "relevance": 0.0, "half_life_hours": 168.0}
    noisy = score_activation(**kwargs, settings=on, rng=StubRng(0.75))  # type: ignore[arg-type]
    assert noisy.noise == pytest.approx(0.726836, abs=1e-6)
    assert noisy.total == pytest.approx(0.726836, abs=1e-6)  # B = 0, S = 0
    ties = score_activation(**kwargs, settings=ActivationSettings(), rng=StubRng(0.75))  # type: ignore[arg-type]
    assert ties.noise == pytest.approx(0.726836, abs=1e-6) and ties.total == 0.0
    quiet = score_activation(**kwargs, settings=off, rng=StubRng(0.75))  # type: ignore[arg-type]
    assert quiet.noise == 0.0


def test_score_activation_uses_petrov_and_latest_access() -> None:
    settings = ActivationSettings()
    # as test_petrov_small_case: B = ln 2; S = 11 * 1 = 11; A = 11.693147
    # retention from the latest access (1 h) with h = 1: 0.5
    got = score_activation(
        access_times=[ago(1)],
        now=NOW,
        relevance=1.0,
        half_life_hours=1.0,
        settings=settings,
        total_count=3,
        first_access=ago(9),
    )
    assert got.total == pytest.approx(11.693147, abs=1e-6)
    assert got.retention == pytest.approx(0.5)


def test_random_module_generator_is_accepted() -> None:
    assert isinstance(make_noise_rng(None), random.Random)


def test_noise_decides_near_ties_only() -> None:
    items = [("a", 5.0, 0.0), ("b", 4.95, 3.0), ("c", 4.0, 9.0), ("d", 3.97, -1.0)]
    ordered = break_ties_by_noise(items, lambda i: i[1], lambda i: i[2], window=0.1)
    # b passes a (within 0.1, larger noise); c never passes b however loud its noise.
    assert [i[0] for i in ordered] == ["b", "a", "c", "d"]
    assert break_ties_by_noise(items, lambda i: i[1], lambda i: i[2], window=0.0) == items


def test_rehearsal_raises_a_rank_at_most_the_cap_over_age_alone() -> None:
    created = ago(100)
    alone = -0.5 * math.log(100)  # one access 100 h ago
    rehearsed = alone + 3.0
    assert ranked_base_level(rehearsed, created, NOW, decay=0.5, cap=1.0) == pytest.approx(
        alone + 1.0
    )
    assert ranked_base_level(alone + 0.4, created, NOW, decay=0.5, cap=1.0) == alone + 0.4
    assert ranked_base_level(rehearsed, created, NOW, decay=0.5, cap=None) == rehearsed
    assert ranked_base_level(float("-inf"), created, NOW, decay=0.5, cap=1.0) == float("-inf")
