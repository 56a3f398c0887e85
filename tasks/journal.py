"""Turn journal task (maintenance queue): prune injection entries past their retention.

Thin: the deletion is `memory.journal.service.prune_injections`, in batches of
PRUNE_BATCH rows, each a transaction of its own, until a batch finds fewer.
"""

from __future__ import annotations

from memory.config import get_settings
from memory.journal.service import PRUNE_BATCH, prune_injections
from memory.types import utcnow
from tasks.app import app
from tasks.base import DbTask


@app.task(base=DbTask, bind=True, name="tasks.journal.prune_journal")
def prune_journal(self: DbTask) -> int:
    """Beat: delete the injection entries older than `journal.retention_days`."""
    retention_days, now, total = get_settings().journal.retention_days, utcnow(), 0
    while True:
        with self.session() as session:
            deleted = prune_injections(
                session=session, retention_days=retention_days, now=now, limit=PRUNE_BATCH
            )
        total += deleted
        if deleted < PRUNE_BATCH:
            return total
