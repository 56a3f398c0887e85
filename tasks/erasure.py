"""Erasure tasks (maintenance queue): run an erasure's steps, and pick up lost ones.

`erase` runs steps for up to TASK_SECONDS, then sends itself again, so a large erasure
never holds a worker for long and its progress is committed step by step; it is
`acks_late` with reject-on-worker-lost (DbTask), so a killed worker's task is delivered
again and resumes from the last committed step. `resume_erasures` (beat) sends `erase`
again for running erasures that no step advanced for STALLED_SECONDS (a task lost with
its broker message); a second runner of the same erasure steps aside (`busy`).
The tasks' arguments name the erasure only, never the user.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from memory.erasure.runner import run_erasure
from memory.erasure.users import DEFAULT_BATCH, stalled_erasures
from memory.errors import NotFoundError
from tasks.app import app
from tasks.base import DbTask

log = logging.getLogger(__name__)

TASK_SECONDS = 20.0
WAIT_COUNTDOWN = 1.0  # waiting for older transactions or a sync: look again in a second
STALLED_SECONDS = 300.0


@app.task(base=DbTask, bind=True, name="tasks.erasure.erase")
def erase(self: DbTask, erasure_id: str, limit: int = DEFAULT_BATCH) -> dict[str, Any]:
    """Run the erasure's steps for a while; send itself again until it is done."""
    try:
        outcome = run_erasure(uuid.UUID(erasure_id), limit=limit, budget_seconds=TASK_SECONDS)
    except NotFoundError:  # its row went with its tenant's erasure: nothing left to do
        return {"status": "gone", "detail": ""}
    if outcome.status in ("running", "waiting"):
        countdown = WAIT_COUNTDOWN if outcome.status == "waiting" else 0
        erase.apply_async((erasure_id,), {"limit": limit}, countdown=countdown)
    return {"status": outcome.status, "detail": outcome.progress.get("detail", "")}


def enqueue_erasure(erasure_id: uuid.UUID, limit: int = DEFAULT_BATCH) -> bool:
    """Publish `erase`; False when the broker cannot take it (`resume_erasures` will)."""
    try:
        erase.apply_async((str(erasure_id),), {"limit": limit}, retry=False)
    except Exception as exc:  # kombu raises several unrelated types for a dead broker
        log.warning("could not enqueue erasure %s: %s", erasure_id, exc)
        return False
    return True


@app.task(base=DbTask, bind=True, name="tasks.erasure.resume_erasures")
def resume_erasures(self: DbTask) -> int:
    """Beat: send `erase` again for each running erasure no step advanced lately."""
    with self.session() as session:
        erasure_ids = stalled_erasures(session=session, idle_seconds=STALLED_SECONDS)
    for erasure_id in erasure_ids:
        enqueue_erasure(erasure_id)
    return len(erasure_ids)
