"""The decay rules as pure functions: what the sweep does to one note at one moment."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory.activation.decay import NoteState, decay_activation, note_fate
from memory.config import load_settings

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SETTINGS = load_settings()


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def state(**changes: object) -> NoteState:
    base = NoteState(status="active", pinned=False, created_at=T0, expires_at=None,
                     archived_at=None, access_times=[T0], access_count=1, first_access_at=T0,
                     half_life_hours=168.0)  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def fate(s: NoteState, hours: float, **overrides: object):  # type: ignore[no-untyped-def]
    settings = load_settings(**overrides) if overrides else SETTINGS
    return note_fate(s, at(hours), settings.decay, settings.activation)


def test_half_life_slows_the_clock_exactly() -> None:
    """D(t, h = m·h0) equals D(t/m, h0): a note with m times the half-life fades m times slower."""
    kwargs = {"access_count": 1, "first_access": T0, "settings": SETTINGS.activation}
    slow = decay_activation(access_times=[T0], now=at(400), half_life_hours=4 * 168, **kwargs)
    fast = decay_activation(access_times=[T0], now=at(100), half_life_hours=168, **kwargs)
    assert slow == pytest.approx(fast)
    assert fast == pytest.approx(-0.5 * math.log(100))


def test_archive_needs_both_age_and_low_activation() -> None:
    assert fate(state(), 60) is None  # D < -2 from 54.6 h, but younger than 72 h
    archived = fate(state(), 72)
    assert archived is not None and archived.action == "archive"
    assert fate(state(access_times=[T0, at(70)], access_count=2), 72) is None  # used recently


def test_pinned_notes_never_decay_expire_or_get_pruned() -> None:
    pinned = state(pinned=True, expires_at=at(1))
    assert fate(pinned, 10_000) is None
    assert fate(replace(pinned, status="archived", archived_at=at(1)), 10_000) is None


def test_ttl_expiry_comes_first_and_ignores_age() -> None:
    expired = fate(state(expires_at=at(24), access_times=[at(23)]), 24)
    assert expired is not None and expired.action == "expire" and expired.reason == "expired"
    assert fate(state(expires_at=at(24)), 23.9) is None


def test_archived_notes_are_deleted_by_age_or_by_hard_threshold() -> None:
    archived = state(status="archived", archived_at=at(72))
    assert fate(archived, 72 + 719) is None
    by_age = fate(archived, 72 + 720)
    assert by_age is not None and by_age.action == "delete" and "720" in by_age.reason
    by_strength = fate(archived, 500, decay={"hard_prune_threshold": -3.0})  # e^6 = 403 h
    assert by_strength is not None and by_strength.action == "delete"


def test_closed_or_forgotten_notes_are_left_alone() -> None:
    assert fate(state(status="deleted"), 10_000) is None
    assert fate(state(status="pending"), 10_000) is None


def test_no_access_at_all_is_minus_infinity_and_fails_every_threshold() -> None:
    gone = fate(state(access_times=[], access_count=0), 100)
    assert gone is not None and gone.activation == float("-inf") and "-inf" in gone.reason
