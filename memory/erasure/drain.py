"""The transactions an erasure waits for before its last pass.

A statement sees the database as it was when it started: a capture whose statement
started before the erasure's row was committed does not see it, and a pipeline stage
that read the user's rows before they were deleted may still write rows derived from
them. So once a pass has found nothing left (at `since`), the erasure waits until every
transaction of this database that started before `since` has ended; then a last pass
that also finds nothing proves that nothing can come back (a capture starting later sees
the running erasure and stores nothing).

Invariants: only client backends of the current database, other than the caller's, are
counted; a backend whose activity this role may not see (another role without
pg_read_all_stats) shows no transaction start and is not waited for, so the service's
processes should share the erasing role (the default) or it should hold pg_read_all_stats.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

# A few of them are named in the progress, so an operator can see what holds it up.
SHOWN = 3

_OLDER = text(
    "SELECT pid, xact_start, coalesce(state, '') AS state,"
    " coalesce(application_name, '') AS application"
    " FROM pg_stat_activity"
    " WHERE datname = current_database() AND backend_type = 'client backend'"
    " AND pid <> pg_backend_pid() AND xact_start < :since"
    " ORDER BY xact_start"
)


@dataclass(frozen=True)
class OlderTransaction:
    pid: int
    started: datetime
    state: str
    application: str

    def describe(self) -> str:
        name = f" {self.application}" if self.application else ""
        return f"pid {self.pid}{name} ({self.state}, since {self.started.isoformat()})"


def now(session: Session) -> datetime:
    """The database's clock now (not the transaction's start): what `since` is taken as."""
    return session.execute(text("SELECT clock_timestamp()")).scalar_one()


def older_transactions(*, session: Session, since: datetime) -> list[OlderTransaction]:
    """The transactions of other backends of this database open since before `since`."""
    rows = session.execute(_OLDER, {"since": since})
    return [OlderTransaction(r.pid, r.xact_start, r.state, r.application) for r in rows]


def waiting_message(older: list[OlderTransaction]) -> str:
    shown = "; ".join(t.describe() for t in older[:SHOWN])
    more = f" and {len(older) - SHOWN} more" if len(older) > SHOWN else ""
    return (
        f"waiting for {len(older)} transaction(s) older than the erasure's last pass to "
        f"end: {shown}{more}"
    )
