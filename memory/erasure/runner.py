"""Running an erasure's steps (memory.erasure.steps), each in a transaction of its own,
until it is done, a time budget is spent, or another runner holds it: what the task and
the CLI call.

Invariants: a step's transaction commits before the next one starts (progress is
durable step by step); a runner that finds another at work steps aside (`busy`) unless
told to wait; waiting (for older transactions, a running sync, another runner) sleeps
`POLL_SECONDS` between steps and never holds a transaction open.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from memory.clients.redis import get_redis
from memory.config import Settings, get_settings
from memory.db import session_scope
from memory.erasure.steps import DEFAULT_BATCH, Step, StepStatus, erase_step
from memory.erasure.users import get_erasure

POLL_SECONDS = 0.2


@dataclass
class Outcome:
    """Where a run stopped: `done` (with the report), `running` (budget spent), `waiting`
    or `busy` (another runner holds the erasure)."""

    status: StepStatus
    progress: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] | None = None


def run_erasure(
    erasure_id: uuid.UUID,
    *,
    limit: int = DEFAULT_BATCH,
    budget_seconds: float | None = None,
    wait_busy: bool = False,
    on_step: Callable[[Step], None] | None = None,
    settings: Settings | None = None,
    client: redis.Redis | None = None,
    sync_root: Path | None = None,
) -> Outcome:
    """Step the erasure until it is done (or the budget is spent, or it is busy)."""
    settings = settings or get_settings()
    client = client or get_redis(settings)
    root = sync_root or settings.sync_dir
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    while True:
        with session_scope(settings) as session:
            step = erase_step(
                session=session, erasure_id=erasure_id, limit=limit, client=client, sync_root=root
            )
        if on_step is not None:
            on_step(step)
        if step.status == "done":
            return Outcome("done", step.progress, _report(erasure_id, settings))
        if step.status == "busy" and not wait_busy:
            return Outcome("busy", step.progress)
        out_of_time = deadline is not None and time.monotonic() >= deadline
        if out_of_time:
            return Outcome(step.status, step.progress)
        if step.status in ("waiting", "busy"):
            time.sleep(POLL_SECONDS)


def _report(erasure_id: uuid.UUID, settings: Settings) -> dict[str, Any] | None:
    with session_scope(settings) as session:
        return get_erasure(session=session, erasure_id=erasure_id).report
