"""The decay sweep on a frozen clock: 30 simulated days of accesses, sweeps every 6 hours.

Expected hours follow from D = -d·ln(t) + d·ln(h/h0) for a note used once (at creation):
archived at the first sweep with t ≥ minAgeHours and D < pruneThreshold, hard-deleted at
the first sweep with D < hardPruneThreshold or archived ≥ maxAgeHours.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select, text

from memory.activation.decay import decay_activation
from memory.activation.decay_sql import scan_user
from memory.activation.model import base_level, grow_half_life, record_access
from memory.activation.service import record_note_accesses
from memory.activation.sweep import sweep_user
from memory.cli.main import cli
from memory.config import Settings, load_settings
from memory.consolidation.cycle import LOCK_CLASS, run_decay
from memory.db import session_scope
from memory.links.models import Link
from memory.notes.models import Note, Tombstone
from memory.ops.models import AuditEvent
from tests.integration.sleep_notes import (
    active_current_count,
    add_notes,
    indexed_count,
    make_note,
)

pytestmark = pytest.mark.integration

T0 = datetime(2025, 3, 1, tzinfo=UTC)
STEP_HOURS = 6
DAYS = 30


def hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


def simulate(
    tenant_id: str,
    user_id: str,
    settings: Settings,
    specs: dict[str, dict[str, Any]],
    uses: dict[str, Sequence[float]] | None = None,
    days: int = DAYS,
) -> dict[str, dict[str, float]]:
    """Run one sweep every 6 h for `days`; record each note's use at the given hours.

    Returns {note name: {action: hour of the sweep that did it}}.
    """
    names = list(specs)
    ids = add_notes(tenant_id, user_id, settings, [{"created_at": T0, **specs[n]} for n in names])
    by_id = dict(zip(ids, names, strict=True))
    uses = uses or {}
    seen: dict[str, dict[str, float]] = {n: {} for n in names}
    for step in range(1, days * 24 // STEP_HOURS + 1):
        now = hours(step * STEP_HOURS)
        with session_scope() as session:
            for name, at in uses.items():
                for h in at:
                    if now - timedelta(hours=STEP_HOURS) < hours(h) <= now:
                        note_id = ids[names.index(name)]
                        record_note_accesses(session=session, note_ids=[note_id], at=hours(h),
                                             settings=settings.activation)  # fmt: skip
            report = sweep_user(
                session=session, tenant_id=tenant_id, user_id=user_id, now=now, settings=settings
            )
        for action in report.actions:
            seen[by_id[action.note_id]][action.action] = step * STEP_HOURS
    return seen


def first_sweep(predicate: Any, start: float = STEP_HOURS) -> float | None:
    hour = start
    while hour <= DAYS * 24:
        if predicate(hour):
            return hour
        hour += STEP_HOURS
    return None


def test_thirty_days_of_accesses_archive_and_prune_exactly_as_configured(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    daily = [24.0 * d + 1 for d in range(DAYS)]
    early = [24.0 * d + 1 for d in range(10)]
    specs = {
        "never-used": {"content": "Alice mentioned the weather was grey"},
        "daily": {"content": "Alice checks her garden every morning"},
        "early": {"content": "Alice planned the Lisbon trip"},
        "stable": {"content": "Alice is allergic to peanuts", "kind": "stable"},
        "ephemeral": {"content": "Alice is in a meeting now", "kind": "ephemeral"},
        "pinned": {"content": "Alice's passport number is X123", "pinned": True},
        "ttl": {"content": "Alice parked on level 3", "expires_at": hours(24)},
        "pinned-ttl": {"content": "Alice's locker is 12", "pinned": True, "expires_at": hours(24)},
    }
    seen = simulate(tenant_id, user_id, settings, specs, {"daily": daily, "early": early})

    # -0.5·ln(t) < -2 from t > 54.6 h, but not before minAgeHours = 72.
    assert seen["never-used"] == {"archive": 72}
    assert seen["ephemeral"] == {"archive": 72}
    # Stable notes start with h = 4·h0: t > 4·54.6 = 218.4 h, first sweep at 222 h.
    assert seen["stable"] == {"archive": 222}
    # Hidden at its TTL, erased expired_erase_after_hours (24) later.
    assert seen["ttl"] == {"expire": 24, "delete": 48}
    assert seen["daily"] == {} and seen["pinned"] == {} and seen["pinned-ttl"] == {}
    # The note used for ten days: its own history and grown half-life, same rule.
    history, count, first, h = [hours(0)], 1, hours(0), settings.activation.initial_half_life_hours
    for at in early:
        history, count, first = record_access(history, count, first, hours(at))
        h = grow_half_life(h, growth=1.5, kind="episodic", multipliers={"episodic": 1.0})
    expected = first_sweep(
        lambda t: (
            base_level(history, hours(t), total_count=count, first_access=first)
            + 0.5 * math.log(h / 168.0)
            < -2.0
        )
    )
    assert seen["early"] == ({"archive": expected} if expected else {})
    # What left active left the BM25 statistics too.
    assert indexed_count(tenant_id, user_id) == active_current_count(tenant_id, user_id) == 4


NEVER_USED = {"note": {"content": "Bob said the bus was late again"}}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, {"archive": 72}),  # defaults: nothing is deleted within 30 days
        ({"decay": {"min_age_hours": 24}}, {"archive": 60}),  # 54.6 h, next sweep
        ({"decay": {"prune_threshold": -2.5}}, {"archive": 150}),  # e^5 = 148.4 h
        ({"decay": {"max_age_hours": 240}}, {"archive": 72, "delete": 312}),
        ({"decay": {"hard_prune_threshold": -2.9}}, {"archive": 72, "delete": 336}),  # e^5.8
        ({"activation": {"decay_parameter": 0.4}}, {"archive": 150}),  # e^(2/0.4)
        (
            {"activation": {"kind_half_life_multipliers": {"episodic": 2.0}}},
            {"archive": 114},  # 2·54.6 = 109.2 h
        ),
    ],
    ids=["defaults", "minAge", "prune", "maxAge", "hardPrune", "decayParameter", "halfLife"],
)
def test_each_decay_setting_changes_the_outcome(
    database_url: str, tenant_id: str, user_id: str, overrides: dict[str, Any],
    expected: dict[str, float],
) -> None:  # fmt: skip
    settings = load_settings(**overrides)
    assert simulate(tenant_id, user_id, settings, NEVER_USED)["note"] == expected


def test_batch_size_claims_in_batches_with_the_same_outcome(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings(sleep={"batch_size": 2})
    specs = [{"content": f"fact number {i}", "created_at": T0} for i in range(5)]
    add_notes(tenant_id, user_id, settings, specs)
    with session_scope() as session:
        report = sweep_user(session=session, tenant_id=tenant_id, user_id=user_id,
                            now=hours(100), settings=settings)  # fmt: skip
    # archived notes first (none), then 5 active ones in batches of 2, 2, 1.
    assert report.batches == 3 and len(report.of("archive")) == 5


def test_hard_delete_leaves_tombstones_and_removes_history_and_links(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings(decay={"max_age_hours": 24})
    with session_scope() as session:
        old = make_note(session, tenant_id=tenant_id, user_id=user_id, settings=settings,
                        content="Carol lived in Oslo", created_at=T0)  # fmt: skip
        new = make_note(session, tenant_id=tenant_id, user_id=user_id, settings=settings,
                        content="Carol lives in Bergen", created_at=T0,
                        lineage_id=old.lineage_id, version=2)  # fmt: skip
        other = make_note(session, tenant_id=tenant_id, user_id=user_id, settings=settings,
                          content="Carol likes fjords", created_at=T0, pinned=True)  # fmt: skip
        old.valid_to, old.superseded_by = hours(1), new.id
        session.add(Link(tenant_id=tenant_id, user_id=user_id, source_id=new.id,
                         target_id=other.id, kind="related", weight=0.6))  # fmt: skip
        ids = (old.id, new.id, other.id)
    for at in (hours(100), hours(130)):  # archive, then archived ≥ 24 h: delete
        with session_scope() as session:
            sweep_user(session=session, tenant_id=tenant_id, user_id=user_id, now=at,
                       settings=settings)  # fmt: skip
    with session_scope() as session:
        assert session.get(Note, ids[0]) is None and session.get(Note, ids[1]) is None
        assert session.get(Note, ids[2]) is not None  # pinned
        assert session.scalars(select(Link).where(Link.target_id == ids[2])).all() == []
        stones = {t.note_id: t for t in session.scalars(
            select(Tombstone).where(Tombstone.tenant_id == tenant_id))}  # fmt: skip
        assert set(stones) == {ids[0], ids[1]}
        # Erased as a forget erases: who and why, no content, not even its hash.
        assert all(s.content_hash is None and s.actor == "decay" for s in stones.values())
        assert stones[ids[1]].deleted_at == hours(130)
        assert all("archived longer than 24 h" in s.reason for s in stones.values())
        actions = session.scalars(
            select(AuditEvent.action).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.actor == "decay"
            )
        ).all()
        assert sorted(actions) == ["note.archived", "note.pruned"]


def test_dry_run_reports_what_the_real_run_does_and_changes_nothing(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    add_notes(tenant_id, user_id, settings, [
        {"content": "Dan drank coffee", "created_at": T0},
        {"content": "Dan's code is 42", "created_at": T0, "expires_at": hours(10)},
        {"content": "Dan is vegetarian", "created_at": T0, "kind": "stable"},
    ])  # fmt: skip
    with session_scope() as session:
        dry = run_decay(session=session, tenant_id=tenant_id, user_id=user_id, now=hours(80),
                        settings=settings, dry_run=True)  # fmt: skip
    assert dry is not None
    assert active_current_count(tenant_id, user_id) == 3
    with session_scope() as session:
        real = run_decay(session=session, tenant_id=tenant_id, user_id=user_id, now=hours(80),
                         settings=settings)  # fmt: skip
    assert real is not None
    assert [(a.note_id, a.action) for a in dry.actions] == [
        (a.note_id, a.action) for a in real.actions
    ]
    assert sorted(a.action for a in real.actions) == ["archive", "expire"]
    assert active_current_count(tenant_id, user_id) == 1


def test_cli_decay_dry_run_prints_what_would_change(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    add_notes(tenant_id, user_id, settings, [{"content": "Eve fed the cat", "created_at": T0}])
    runner = CliRunner()
    args = ["decay", "--user", user_id, "--tenant", tenant_id, "--dry-run"]
    before = runner.invoke(cli, [*args, "--now", hours(48).isoformat()])
    assert before.exit_code == 0, before.output
    assert "would expire 0, archive 0, delete 0" in before.output
    after = runner.invoke(cli, [*args, "--now", hours(72).isoformat()])
    assert after.exit_code == 0, after.output
    assert "would expire 0, archive 1, delete 0" in after.output
    shown = runner.invoke(cli, [*args, "--now", hours(72).isoformat(), "--json"])
    [action] = json.loads(shown.output)["actions"]
    assert action["action"] == "archive" and action["content"] == "Eve fed the cat"
    assert active_current_count(tenant_id, user_id) == 1
    unknown = runner.invoke(cli, ["decay", "--user", "nobody-" + uuid.uuid4().hex[:6],
                                  "--tenant", tenant_id, "--dry-run"])  # fmt: skip
    assert unknown.exit_code == 2 and "unknown user" in unknown.output


def test_one_run_per_user_and_locked_rows_are_skipped(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    [held, free] = add_notes(tenant_id, user_id, settings, [
        {"content": "Frank fixed the bike", "created_at": T0},
        {"content": "Frank bought bread", "created_at": T0},
    ])  # fmt: skip
    with session_scope() as holder:
        holder.execute(text("SELECT pg_advisory_xact_lock(:c, hashtext(:k))"),
                       {"c": LOCK_CLASS, "k": f"{tenant_id}\x1f{user_id}"})  # fmt: skip
        with session_scope() as session:
            assert run_decay(session=session, tenant_id=tenant_id, user_id=user_id,
                             now=hours(100), settings=settings) is None  # fmt: skip
    with session_scope() as holder:
        holder.execute(select(Note).where(Note.id == held).with_for_update())
        with session_scope() as session:
            report = run_decay(session=session, tenant_id=tenant_id, user_id=user_id,
                               now=hours(100), settings=settings)  # fmt: skip
        assert report is not None and [a.note_id for a in report.actions] == [free]
    with session_scope() as session:
        later = run_decay(session=session, tenant_id=tenant_id, user_id=user_id,
                          now=hours(106), settings=settings)  # fmt: skip
    assert later is not None and [a.note_id for a in later.actions] == [held]


def test_the_set_based_activation_equals_the_python_reference(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """The sweep scores notes in SQL; decay.decay_activation is the reference it must match:
    histories of 0-50 stored accesses, counts beyond them (Petrov tail), accesses after
    `now` (1 s floor), grown and shrunk half-lives."""
    settings = load_settings(decay={"prune_threshold": 1e9, "min_age_hours": 0})
    rng, now = random.Random(11), hours(900)
    expected: dict[uuid.UUID, float] = {}
    with session_scope() as session:
        for n in range(40):
            stored = sorted(hours(rng.uniform(0, 910)) for _ in range(rng.choice([0, 1, 3, 50])))
            first = min(stored, default=hours(0)) - timedelta(hours=rng.choice([0, 0, 30]))
            note = make_note(session, tenant_id=tenant_id, user_id=user_id, settings=settings,
                             content=f"fact {n}", created_at=hours(0),
                             access_times=stored or [hours(0)])  # fmt: skip
            note.access_times, note.first_access_at = stored, first
            note.access_count = len(stored) + rng.choice([0, 0, 1, 40])
            note.half_life_hours = rng.choice([42.0, 168.0, 672.0, 5000.0])
            expected[note.id] = decay_activation(
                access_times=stored, now=now, access_count=note.access_count,
                first_access=first, half_life_hours=note.half_life_hours,
                settings=settings.activation)  # fmt: skip
    with session_scope() as session:
        scanned, rows = scan_user(session, tenant_id=tenant_id, user_id=user_id, now=now,
                                  settings=settings)  # fmt: skip
    assert scanned == len(rows) == 40
    got = {row.id: row.strength for row in rows}
    assert sum(1 for v in expected.values() if v == float("-inf")) >= 5
    for note_id, value in expected.items():
        assert got[note_id] == pytest.approx(value, rel=1e-9, abs=1e-9), note_id
