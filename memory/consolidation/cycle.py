"""The per-user maintenance runs beat fans out: the decay sweep and the nightly sleep cycle.

Invariants: at most one maintenance run per user at a time: each run takes the user's
transaction-level advisory lock (pg_try_advisory_xact_lock) first and is skipped, not
queued, when another run holds it (the next scheduled run catches up); a sleep cycle is
one transaction (decay, consolidation, conflict detection, transactive index refresh),
so it is applied whole or not at all and a retry starts from a clean state; each cycle
records its clock in the audit log (`sleep.cycle`), and the next one compares for
conflicts only the notes changed since (a first cycle, or a clock set back, compares
everything); selection (`maintained_users`, `tenant_due`) only reads and never does the
work itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import select, text
from sqlalchemy.orm import Session
from threadpoolctl import threadpool_limits

from memory.activation.decay import DecayReport
from memory.activation.sweep import sweep_user
from memory.clients.llm import LlmClient
from memory.commons.service import refresh_transactive_index
from memory.config import Settings
from memory.conflicts.service import ConflictReport, detect_conflicts
from memory.consolidation.service import ConsolidationReport, consolidate_user
from memory.consolidation.snapshot import load_snapshot
from memory.notes.models import Note
from memory.ops.audit import record_event
from memory.ops.models import AuditEvent

# First key of the two-int advisory lock: keeps these locks apart from any other use.
LOCK_CLASS = 0x5EE9


def try_user_lock(session: Session, tenant_id: str, user_id: str) -> bool:
    """Take the user's maintenance lock until the transaction ends; False if taken."""
    return bool(
        session.scalar(
            text("SELECT pg_try_advisory_xact_lock(:cls, hashtext(:key))"),
            {"cls": LOCK_CLASS, "key": f"{tenant_id}\x1f{user_id}"},
        )
    )


def run_decay(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    dry_run: bool = False,
) -> DecayReport | None:
    """The decay sweep under the user's lock (None: another run holds it). A dry run
    only reads, so it needs no lock."""
    if not dry_run and not try_user_lock(session, tenant_id, user_id):
        return None
    return sweep_user(
        session=session,
        tenant_id=tenant_id,
        user_id=user_id,
        now=now,
        settings=settings,
        dry_run=dry_run,
    )


@dataclass
class SleepReport:
    tenant_id: str
    user_id: str
    now: datetime
    skipped: bool = False
    decay: DecayReport | None = None
    consolidation: ConsolidationReport | None = None
    conflicts: ConflictReport | None = None
    transactive_rows: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, object]:
        return {
            "skipped": self.skipped,
            "decay": self.decay.counts() if self.decay else None,
            "consolidation": self.consolidation.counts() if self.consolidation else None,
            "conflicts": self.conflicts.counts() if self.conflicts else None,
            "transactive_rows": self.transactive_rows,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


def run_sleep_cycle(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    llm: LlmClient | None = None,
) -> SleepReport:
    """Decay, consolidate, detect conflicts and refresh the transactive index, in order."""
    report = SleepReport(tenant_id=tenant_id, user_id=user_id, now=now)
    if not try_user_lock(session, tenant_id, user_id):
        report.skipped = True
        return report
    user = {"tenant_id": tenant_id, "user_id": user_id}
    since = last_cycle_at(session, **user)
    if since is not None and since >= now:  # a clock set back: compare everything again
        since = None
    # One BLAS thread: the cycle runs in a worker process next to others, and BLAS
    # threads spinning for a core made its matrix steps several times slower (measured
    # on 2 shared cores: partitioning 20k vectors 3.8 s with 2 threads, 0.6 s with 1).
    with threadpool_limits(limits=1):
        _run_phases(session, report, user, since=since, now=now, settings=settings, llm=llm)
    record_event(
        session=session,
        tenant_id=tenant_id,
        user_id=user_id,
        actor="sleep",
        action="sleep.cycle",
        entity_type="user",
        entity_id=user_id[:64],
        data={**report.summary(), "now": now.isoformat()},
    )
    return report


def _run_phases(
    session: Session,
    report: SleepReport,
    user: dict[str, str],
    *,
    since: datetime | None,
    now: datetime,
    settings: Settings,
    llm: LlmClient | None,
) -> None:
    with _phase(report, "decay"):
        report.decay = sweep_user(session=session, **user, now=now, settings=settings)
    with _phase(report, "snapshot"):
        snapshot = load_snapshot(session, **user)
    with _phase(report, "consolidation"):
        report.consolidation = consolidate_user(
            session=session, **user, now=now, settings=settings, llm=llm, snapshot=snapshot
        )
    # Knowledge notes just written are not conflict candidates: the snapshot still holds.
    # After a first cycle, only notes changed since the last one are compared (with all).
    with _phase(report, "conflicts"):
        report.conflicts = detect_conflicts(
            session=session, **user, now=now, settings=settings, llm=llm, snapshot=snapshot,
            since=since,
        )  # fmt: skip
    with _phase(report, "transactive"):
        report.transactive_rows = refresh_transactive_index(session=session, **user)


@contextmanager
def _phase(report: SleepReport, name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    report.seconds[name] = time.perf_counter() - started


def last_cycle_at(session: Session, *, tenant_id: str, user_id: str) -> datetime | None:
    """The clock (`now`) of the user's previous sleep cycle, from the audit log."""
    value = session.scalar(
        select(AuditEvent.data["now"].astext)
        .where(
            AuditEvent.tenant_id == tenant_id,
            AuditEvent.user_id == user_id,
            AuditEvent.action == "sleep.cycle",
        )
        .order_by(AuditEvent.id.desc())
        .limit(1)
    )
    return datetime.fromisoformat(value) if value else None


def maintained_users(session: Session, *, statuses: tuple[str, ...]) -> list[tuple[str, str]]:
    """(tenant, user) of every user with a current note in one of `statuses`."""
    rows = session.execute(
        select(Note.tenant_id, Note.user_id)
        .where(Note.status.in_(statuses), Note.valid_to.is_(None))
        .distinct()
        .order_by(Note.tenant_id, Note.user_id)
    )
    return [(tenant, user) for tenant, user in rows]


def tenant_due(tenant_id: str, now: datetime, settings: Settings) -> bool:
    """True in the tenant's local consolidation hour (UTC unless a zone is configured)."""
    zone = ZoneInfo(settings.sleep.tenant_timezones.get(tenant_id, "UTC"))
    return now.astimezone(zone).hour == settings.sleep.consolidation_hour
