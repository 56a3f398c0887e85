"""The steps of an erasure (memory.erasure.users): each one short transaction.

Invariants: a step locks the erasure's row (SKIP LOCKED: a second runner steps aside,
`busy`) and records its progress in the transaction that deleted the rows, so a step cut
short by a killed worker is rolled back whole and the next runner resumes where the last
committed step stopped, counting nothing twice; a step of a user erasure holds the user's
maintenance lock (the sleep cycle's and the decay sweep's), so neither runs beside it;
`done` is set only in the step whose census, after the drain, found nothing left.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import redis
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from memory.consolidation.cycle import LOCK_CLASS
from memory.erasure import drain
from memory.erasure.models import Erasure
from memory.erasure.passes import census, delete_batch
from memory.erasure.plan import Target, units
from memory.erasure.stores import Removed, remove_outside
from memory.errors import InvalidInputError, NotFoundError
from memory.types import utcnow

DEFAULT_BATCH = 500
StepStatus = Literal["running", "waiting", "busy", "done"]


@dataclass
class Step:
    """What one step did: its status, the rows it removed per table, what it is at."""

    status: StepStatus
    removed: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    progress: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Context:
    """What a phase works with: the locked erasure, its target and progress (updated in
    place), the batch size, and the Redis client and sync root outside the database."""

    erasure: Erasure
    target: Target
    progress: dict[str, Any]
    limit: int
    client: redis.Redis
    sync_root: Path

    def remove_outside(self) -> Removed:
        return remove_outside(
            client=self.client,
            sync_root=self.sync_root,
            tenant_id=self.target.tenant_id,
            user_id=self.target.user_id,
        )


def erase_step(
    *,
    session: Session,
    erasure_id: uuid.UUID,
    limit: int = DEFAULT_BATCH,
    client: redis.Redis,
    sync_root: Path,
) -> Step:
    """One step of the erasure (see the module docstring); never commits."""
    if limit < 1:
        raise InvalidInputError("limit: must be at least 1")
    erasure = session.scalar(
        select(Erasure).where(Erasure.id == erasure_id).with_for_update(skip_locked=True)
    )
    if erasure is None:
        if session.get(Erasure, erasure_id) is None:
            raise NotFoundError(f"no erasure {erasure_id}", erasure_id=str(erasure_id))
        return Step("busy", detail="another runner is at a step of this erasure")
    if erasure.status == "done":
        return Step("done", detail="done", progress=erasure.progress)
    target = Target(erasure.tenant_id, erasure.user_id, erasure.id)
    if target.user_id is not None:  # no sleep cycle or decay sweep beside this step
        key = f"{target.tenant_id}\x1f{target.user_id}"  # as consolidation.cycle's
        session.execute(
            text("SELECT pg_advisory_xact_lock(:cls, hashtext(:key))"),
            {"cls": LOCK_CLASS, "key": key},
        )
    progress = dict(erasure.progress)
    context = _Context(erasure, target, progress, limit, client, sync_root)
    step = PHASES[progress.get("phase", "outside")](session, context)
    removed = dict(progress.get("removed", {}))
    for table, count in step.removed.items():
        removed[table] = removed.get(table, 0) + count
    progress.update(
        removed=removed,
        steps=progress.get("steps", 0) + 1,
        updated_at=utcnow().isoformat(),
        detail=step.detail,
    )
    erasure.progress = progress
    step.progress = progress
    return step


def _outside_phase(session: Session, context: _Context) -> Step:
    context.progress["total"] = census(session=session, target=context.target)
    removed = context.remove_outside()
    if removed.busy:
        return Step("waiting", removed.counts(), _sync_running(removed.busy))
    context.progress.update(phase="rows", unit=0)
    return Step("running", removed.counts(), "removed Redis keys and synced files")


def _sync_running(directories: tuple[str, ...]) -> str:
    return f"waiting for the sync of {', '.join(directories)} to finish"


def _rows_phase(session: Session, context: _Context) -> Step:
    target, progress = context.target, context.progress
    plan = units(target.whole_tenant)
    index = int(progress.get("unit", 0))
    while index < len(plan):
        unit = plan[index]
        removed = delete_batch(session=session, unit=unit, target=target, limit=context.limit)
        if removed:
            progress["unit"] = index
            return Step("running", removed, f"removing rows of {plan[index].table}")
        index += 1
    progress.update(phase="drain", unit=0, since=drain.now(session).isoformat())
    return Step("running", {}, "nothing left found; waiting for older transactions")


def _drain_phase(session: Session, context: _Context) -> Step:
    progress = context.progress
    since = datetime.fromisoformat(progress["since"])
    older = drain.older_transactions(session=session, since=since)
    if older:
        return Step("waiting", {}, drain.waiting_message(older))
    remaining = census(session=session, target=context.target)
    if any(remaining.values()):  # written by transactions that ended meanwhile
        progress.update(phase="rows", unit=0, passes=progress.get("passes", 1) + 1)
        progress.pop("since", None)
        return Step("running", {}, "rows came back; another pass")
    removed = context.remove_outside()
    if removed.busy:
        return Step("waiting", removed.counts(), _sync_running(removed.busy))
    _finish(context.erasure, progress, remaining, removed.counts())
    return Step("done", removed.counts(), "done")


def _finish(
    erasure: Erasure, progress: dict[str, Any], remaining: dict[str, int], last: dict[str, int]
) -> None:
    """The report: rows removed per table (every place, zero included), what is left
    (all zero, verified in this transaction), Redis keys and files, tokens revoked."""
    removed = dict(progress.get("removed", {}))
    for name, count in last.items():
        removed[name] = removed.get(name, 0) + count
    finished = utcnow()
    erasure.status = "done"
    erasure.finished_at = finished
    erasure.report = {
        "removed": {name: removed.get(name, 0) for name in [*remaining, *last]},
        "remaining": remaining,
        "tokens_revoked": progress.get("tokens_revoked", 0),
        "passes": progress.get("passes", 1),
        "seconds": round((finished - erasure.started_at).total_seconds(), 3),
    }
    progress.update(phase="done")
    progress.pop("since", None)


PHASES = {"outside": _outside_phase, "rows": _rows_phase, "drain": _drain_phase}
