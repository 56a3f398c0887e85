"""The decay sweep (DESIGN.md §6): archive what stopped mattering, prune it later, expire TTLs.

Rules, evaluated at an explicit `now` (tasks pass utcnow, tests a frozen clock):

- Decay activation D = B + d·ln(h / h0): the ACT-R base level B on a clock slowed by the
  note's half-life h relative to the initial half-life h0. Because h starts at
  h0 * kind multiplier, stable/preference/knowledge notes (multiplier > 1) fade that many
  times slower than episodic ones, ephemeral ones (< 1) faster, and every real use
  (which grows h) slows the clock further. (Σ (t·h0/h)^(-d) = (h/h0)^d · Σ t^(-d).)
- An active, current, unpinned note whose TTL has passed (expires_at ≤ now) is expired:
  archived with reason "expired" (the read path already hides it).
- An active, current, unpinned note older than min_age_hours (since created_at) with
  D < prune_threshold is archived.
- An archived, current, unpinned note is erased (memory.erasure.forget: every version,
  the turns it came from, what it gave other notes) when its TTL passed more than
  expired_erase_after_hours ago, when D < hard_prune_threshold, or when it has been
  archived longer than max_age_hours; each erased row leaves a Tombstone (id, reason,
  time, actor; no content).
- Pinned notes never decay, expire or get pruned. Closed versions of live notes (history)
  and forgotten (deleted) notes are not touched.

`note_fate` is the reference; `memory.activation.decay_sql` evaluates the same rules for
a whole user in one statement (tests hold the two equal), and `fate_for` turns the rule
it names into the same Fate, so both paths give the same actions and reasons.

Invariants: a note leaves the BM25 statistics exactly when it leaves active (archive or
expiry); only the notes a rule selects are claimed, in batches, with FOR UPDATE SKIP
LOCKED, so a row a write-path worker holds is skipped (the next sweep sees it) and the
hot path never waits; a dry run evaluates the same rules and changes nothing.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import Row

from memory.activation.model import base_level
from memory.config import ActivationSettings, DecaySettings

Action = Literal["expire", "archive", "delete"]
# Which rule fired: the set-based query names it, `fate_for` explains it.
Rule = Literal["expire", "archive", "delete_expired", "delete_age", "delete_weak"]
NEG_INF = float("-inf")


def decay_activation(
    *,
    access_times: list[datetime],
    now: datetime,
    access_count: int,
    first_access: datetime | None,
    half_life_hours: float,
    settings: ActivationSettings,
) -> float:
    """D = B + d·ln(h/h0): the base level on a clock slowed by the note's half-life."""
    b = base_level(
        access_times,
        now,
        decay=settings.decay_parameter,
        total_count=access_count,
        first_access=first_access,
    )
    if b == NEG_INF:
        return b
    ratio = max(half_life_hours, 1e-9) / settings.initial_half_life_hours
    return b + settings.decay_parameter * math.log(ratio)


@dataclass(frozen=True)
class Fate:
    action: Action
    reason: str
    activation: float | None


@dataclass(frozen=True)
class NoteState:
    """What the rules need to know about one note (a row of the sweep's scan)."""

    status: str
    pinned: bool
    created_at: datetime
    expires_at: datetime | None
    archived_at: datetime | None
    access_times: list[datetime]
    access_count: int
    first_access_at: datetime | None
    half_life_hours: float


def note_fate(
    state: NoteState, now: datetime, decay: DecaySettings, activation: ActivationSettings
) -> Fate | None:
    """What the sweep does to one current note at `now`, or None (it stays as it is)."""
    if state.pinned:
        return None
    strength = decay_activation(
        access_times=list(state.access_times or []),
        now=now,
        access_count=state.access_count,
        first_access=state.first_access_at,
        half_life_hours=state.half_life_hours,
        settings=activation,
    )
    rule = _rule(state, now, strength, decay)
    return None if rule is None else fate_for(rule, strength, decay)


def _rule(state: NoteState, now: datetime, strength: float, decay: DecaySettings) -> Rule | None:
    if state.status == "active":
        if state.expires_at is not None and state.expires_at <= now:
            return "expire"
        old_enough = now - state.created_at >= timedelta(hours=decay.min_age_hours)
        return "archive" if old_enough and strength < decay.prune_threshold else None
    if state.status == "archived":
        erase_after = timedelta(hours=decay.expired_erase_after_hours)
        if state.expires_at is not None and state.expires_at <= now - erase_after:
            return "delete_expired"
        archived_at = state.archived_at or state.created_at
        if now - archived_at >= timedelta(hours=decay.max_age_hours):
            return "delete_age"
        if strength < decay.hard_prune_threshold:
            return "delete_weak"
    return None


def fate_for(rule: Rule, strength: float, decay: DecaySettings) -> Fate:
    """The action and reason of a rule that fired for a note of decay activation `strength`."""
    if rule == "expire":
        return Fate("expire", "expired", strength)
    if rule == "archive":
        return Fate("archive", f"activation {_fmt(strength)} < {decay.prune_threshold}", strength)
    if rule == "delete_expired":
        hours = f"{decay.expired_erase_after_hours:g}"
        return Fate("delete", f"expired more than {hours} h ago", strength)
    if rule == "delete_age":
        return Fate("delete", f"archived longer than {decay.max_age_hours:g} h", strength)
    return Fate("delete", f"activation {_fmt(strength)} < {decay.hard_prune_threshold}", strength)


def _fmt(value: float) -> str:
    return "-inf" if value == NEG_INF else f"{value:.2f}"


@dataclass(frozen=True)
class DecayAction:
    note_id: uuid.UUID
    action: Action
    reason: str
    activation: float | None
    kind: str
    content: str
    lineage_id: uuid.UUID
    agent_id: str
    visibility: str
    domain: str

    @classmethod
    def of_row(cls, row: Row[tuple[object, ...]], fate: Fate) -> DecayAction:
        return cls(
            note_id=row.id,
            action=fate.action,
            reason=fate.reason,
            activation=fate.activation,
            kind=row.kind,
            content=row.content,
            lineage_id=row.lineage_id,
            agent_id=row.agent_id,
            visibility=row.visibility,
            domain=row.domain,
        )


@dataclass
class DecayReport:
    tenant_id: str
    user_id: str
    now: datetime
    dry_run: bool
    scanned: int = 0
    batches: int = 0
    actions: list[DecayAction] = field(default_factory=list)
    # Closed earlier versions hard-deleted with their archived note (tombstoned too).
    history_deleted: int = 0

    def of(self, action: Action) -> list[DecayAction]:
        return [a for a in self.actions if a.action == action]

    def counts(self) -> dict[str, int]:
        return {
            "scanned": self.scanned,
            "expired": len(self.of("expire")),
            "archived": len(self.of("archive")),
            "deleted": len(self.of("delete")),
            "history_deleted": self.history_deleted,
        }
