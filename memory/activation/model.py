"""ACT-R activation and Ebbinghaus retention: the pure maths of DESIGN.md §5 step 3-4.

Activation of a note for one query is A = B + S + ε:

- B, the base level, says how often and how recently the note was used;
- S, spreading activation, says how relevant it is to the current query;
- ε, logistic noise, makes retrieval stochastic (off in benchmarks and tests).

Retention R = 2^(-Δt/h) is the Ebbinghaus forgetting curve with a half-life h that grows
each time the note is actually used.

Invariants: every function here is pure (no I/O, no clock, no global state: the caller
passes `now` and any random generator); times are in HOURS; all datetimes passed to one
call must be comparable (all timezone-aware, ideally UTC, or all naive).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory.config import ActivationSettings

SECONDS_PER_HOUR = 3600.0
# ACT-R's t^(-d) is infinite at t = 0; one second is the floor, so a brand-new note gets
# B = ln((1/3600)^(-0.5)) = ln 60 ≈ 4.09 and is retrievable at once.
MIN_AGE_HOURS = 1.0 / SECONDS_PER_HOUR
# B of a note with no recorded access: ln(0). Callers comparing against thresholds get the
# right answer (it fails every threshold); serialisers must map it (JSON has no -inf).
NO_ACCESS_BASE_LEVEL = float("-inf")
# How many access times a note stores; older ones survive only as count + first access.
DEFAULT_HISTORY_KEEP = 50
# Ceiling for a half-life before the kind multiplier (one year): keeps h finite after many
# uses and stops a heavily used short-lived note from never fading.
MAX_HALF_LIFE_HOURS = 8760.0

NoiseRng = random.Random | np.random.Generator


def _age_hours(at: datetime, now: datetime) -> float:
    """Hours from `at` to `now`, floored at one second (future timestamps clamp too)."""
    return max((now - at).total_seconds() / SECONDS_PER_HOUR, MIN_AGE_HOURS)


def _petrov_tail(missing: int, *, t_k: float, t_n: float, decay: float) -> float:
    """Petrov (2006) estimate of Σ t^(-d) for `missing` accesses not stored.

    They are assumed spread uniformly between t_k (age of the oldest stored access) and
    t_n (age of the first access): missing · (1/(t_n - t_k)) ∫ t^(-d) dt over [t_k, t_n].
    """
    t_n = max(t_n, t_k)  # a first access "younger" than stored history is inconsistent data
    if t_n - t_k < 1e-9:
        # Limit of the integral mean as the interval closes: all at age t_k.
        return missing * t_k ** (-decay)
    one_minus = 1.0 - decay
    return missing * (t_n**one_minus - t_k**one_minus) / (one_minus * (t_n - t_k))


def base_level(
    access_times: Sequence[datetime],
    now: datetime,
    *,
    decay: float = 0.5,
    total_count: int | None = None,
    first_access: datetime | None = None,
) -> float:
    """ACT-R base level B = ln Σ_j t_j^(-d), t_j in hours since access j (floor 1 s).

    `access_times` are the stored accesses, in any order; creation counts as the first
    access, so the caller includes the creation time while it is still stored. When
    `total_count` exceeds len(access_times) (only the last 50 are kept), the older
    n - k accesses are approximated with Petrov's hybrid formula, which needs
    `first_access` (the creation time). `total_count` ≤ len(access_times) is ignored.

    Returns NO_ACCESS_BASE_LEVEL (-inf) when there are no accesses. Future timestamps
    clamp to the 1 s floor. Raises ValueError if 0 < decay < 1 does not hold or if the
    approximation is needed and `first_access` is missing.
    """
    if not 0.0 < decay < 1.0:
        raise ValueError(f"decay must be in (0, 1), got {decay}")
    if not access_times:
        return NO_ACCESS_BASE_LEVEL
    ages = [_age_hours(at, now) for at in access_times]
    total = math.fsum(age ** (-decay) for age in ages)
    missing = (total_count or 0) - len(ages)
    if missing > 0:
        if first_access is None:
            raise ValueError("first_access is required when total_count > len(access_times)")
        t_n = _age_hours(first_access, now)
        total += _petrov_tail(missing, t_k=max(ages), t_n=t_n, decay=decay)
    return math.log(total)


def spreading(relevance: float, *, weight: float = 11.0, link_spread: float = 0.0) -> float:
    """Spreading activation S = W · relevance + link_spread.

    `relevance` is the query relevance in [0, 1] (fusion.to_relevance); values outside are
    clamped so a stray score cannot dominate B. NaN raises ValueError: it is always a bug.
    """
    if math.isnan(relevance):
        raise ValueError("relevance is NaN")
    return weight * min(max(relevance, 0.0), 1.0) + link_spread


def make_noise_rng(seed: int | None) -> random.Random:
    """A noise generator: seeded → reproducible, None → seeded from OS entropy.

    Make ONE per query and draw once per candidate: a fresh seeded generator per note
    would give every note the same ε.
    """
    return random.Random(seed)


def logistic_noise(rng: NoiseRng | None, *, stddev: float = 1.2) -> float:
    """One draw of ACT-R's logistic noise ε with standard deviation `stddev`.

    The logistic scale is s = sigma√3/π (its variance is s²π²/3); the draw uses the inverse
    CDF s·ln(u/(1-u)) with u uniform on (0, 1). `rng` None or stddev 0 → 0.0 (noise off).
    """
    if rng is None or stddev == 0.0:
        return 0.0
    if stddev < 0.0:
        raise ValueError(f"stddev must be >= 0, got {stddev}")
    u = float(rng.random())
    while u <= 0.0:  # random() is [0, 1); ln(0) is undefined, so redraw (p ≈ 2^-53)
        u = float(rng.random())
    scale = stddev * math.sqrt(3.0) / math.pi
    return scale * math.log(u / (1.0 - u))


def ranked_base_level(
    base: float, first_access: datetime | None, now: datetime, *, decay: float, cap: float | None
) -> float:
    """B as ranking uses it: at most `cap` above the base level of a single access at
    `first_access` (the note's age alone), so a memory used for other questions does not
    crowd out one the question asks for; B itself is unchanged for decay and pruning."""
    if cap is None or first_access is None or math.isinf(base):
        return base
    age = max((now - first_access).total_seconds() / 3600.0, MIN_AGE_HOURS)
    return min(base, -decay * math.log(age) + cap)


def break_ties_by_noise(
    items: list[Any], score: Callable[[Any], float], noise: Callable[[Any], float], window: float
) -> list[Any]:
    """`items` (best first by `score`) with each run of items within `window` of the run's
    first reordered by `score + noise`: noise decides near-ties, never a clear order."""
    ordered: list[Any] = []
    run: list[Any] = []
    for item in items:
        if run and score(run[0]) - score(item) > window:
            ordered += sorted(run, key=lambda i: -(score(i) + noise(i)))
            run = []
        run.append(item)
    return ordered + sorted(run, key=lambda i: -(score(i) + noise(i)))


def activation(base: float, spread: float, noise: float) -> float:
    """A = B + S + ε."""
    return base + spread + noise


def retention(last_access: datetime, now: datetime, half_life_hours: float) -> float:
    """Ebbinghaus retention R = 2^(-Δt/h), Δt in hours since the last access.

    R is in (0, 1]; R = 1 at Δt ≤ 0 (future timestamps clamp, no floor needed here),
    R = 0.5 after one half-life. Raises ValueError when half_life_hours ≤ 0.
    """
    if half_life_hours <= 0.0:
        raise ValueError(f"half_life_hours must be > 0, got {half_life_hours}")
    elapsed = max((now - last_access).total_seconds() / SECONDS_PER_HOUR, 0.0)
    return 2.0 ** (-elapsed / half_life_hours)


def initial_half_life(kind: str, settings: ActivationSettings) -> float:
    """Half-life of a new note: initial_half_life_hours x the kind's multiplier.

    Unknown kinds use multiplier 1.0 (episodic behaviour), so a new kind never breaks.
    """
    return settings.initial_half_life_hours * settings.kind_half_life_multipliers.get(kind, 1.0)


def grow_half_life(
    current_h: float,
    *,
    growth: float,
    kind: str,
    multipliers: Mapping[str, float],
    max_hours: float = MAX_HALF_LIFE_HOURS,
) -> float:
    """Half-life after one real use: min(h · growth, max_hours · multiplier(kind)).

    Semantics: the kind multiplier is applied once, at creation (initial_half_life), and
    every use multiplies h by the same growth factor, so the ratio between kinds is kept
    as notes are used. The kind enters here only through the cap, which keeps h finite and
    stops an ephemeral note from outliving stable ones however often it is used. A "real
    use" is the caller's decision (a note injected into a context and used, not merely
    listed). h never shrinks: a current value already above the cap is kept.
    """
    if growth < 1.0:
        raise ValueError(f"growth must be >= 1, got {growth}")
    if current_h <= 0.0:
        raise ValueError(f"current_h must be > 0, got {current_h}")
    cap = max_hours * multipliers.get(kind, 1.0)
    return max(current_h, min(current_h * growth, cap))


def record_access(
    history: list[datetime],
    count: int,
    first: datetime | None,
    at: datetime,
    keep: int = DEFAULT_HISTORY_KEEP,
) -> tuple[list[datetime], int, datetime]:
    """Add one access: returns (last `keep` times sorted oldest first, count + 1, first).

    The input list is not mutated. Accesses recorded late (off the hot path, out of order)
    are inserted in time order. The count never falls below the number of stored times,
    and `first` is the earliest access ever seen (creation, when recorded first).
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    times = sorted(history)
    bisect.insort(times, at)
    earliest = times[0] if first is None else min(first, times[0])
    new_count = max(count, len(history)) + 1
    return times[-keep:], new_count, earliest


@dataclass(frozen=True, slots=True)
class ActivationBreakdown:
    """One note's activation for one query, kept whole for the result's explanation.

    total = base_level + spreading (+ noise unless it only breaks ties);
    threshold_passed ⇔ total ≥ threshold.
    """

    base_level: float
    spreading: float
    noise: float
    total: float
    retention: float
    threshold_passed: bool


def score_activation(
    *,
    access_times: Sequence[datetime],
    now: datetime,
    relevance: float,
    half_life_hours: float,
    settings: ActivationSettings,
    rng: NoiseRng | None = None,
    total_count: int | None = None,
    first_access: datetime | None = None,
    link_spread: float = 0.0,
) -> ActivationBreakdown:
    """Score one candidate note with the configured ACT-R parameters.

    Noise is drawn only when settings.noise_enabled and an `rng` is given (one generator
    per query, see make_noise_rng); otherwise ε = 0. Retention is measured from the most
    recent stored access (or `first_access` when none is stored; R = 0 with neither).
    """
    base = base_level(
        access_times,
        now,
        decay=settings.decay_parameter,
        total_count=total_count,
        first_access=first_access,
    )
    last = max(access_times) if access_times else first_access
    return activation_breakdown(
        base=base,
        last_access=last,
        now=now,
        relevance=relevance,
        half_life_hours=half_life_hours,
        settings=settings,
        rng=rng,
        link_spread=link_spread,
    )


def activation_breakdown(
    *,
    base: float,
    last_access: datetime | None,
    now: datetime,
    relevance: float,
    half_life_hours: float,
    settings: ActivationSettings,
    rng: NoiseRng | None = None,
    link_spread: float = 0.0,
) -> ActivationBreakdown:
    """`score_activation` for a note whose base level B is already known (the read path
    has PostgreSQL compute it, `base_level_sql`); R = 0 without a last access."""
    spread = spreading(relevance, weight=settings.context_weight, link_spread=link_spread)
    noise = logistic_noise(rng if settings.noise_enabled else None, stddev=settings.noise_stddev)
    # As a tie breaker (the default), ε orders near-equal hits later and moves no total.
    total = activation(base, spread, 0.0 if settings.noise_ties_only else noise)
    kept = retention(last_access, now, half_life_hours) if last_access is not None else 0.0
    return ActivationBreakdown(
        base_level=base,
        spreading=spread,
        noise=noise,
        total=total,
        retention=kept,
        threshold_passed=total >= settings.retrieval_threshold,
    )
