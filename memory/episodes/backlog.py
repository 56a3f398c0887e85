"""How far the workers are behind: captured episodes waiting for extraction, and how long
they take to drain at the pace of the last minute.

Invariants: a capture is refused (OverloadedError, 429 with Retry-After) only while at
least `pipeline.max_backlog` episodes wait, so what is acknowledged is what the workers
can absorb in bounded time, and a client that keeps its turns (the OpenClaw plugin does)
resends them later; 0 never refuses. The count costs one index-only look-up, bounded by
the limit, and each process takes it at most once a second: a burst of captures costs
the database one count, not one each.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memory.episodes.models import Episode
from memory.errors import OverloadedError
from memory.types import utcnow

PACE_WINDOW = timedelta(seconds=60)
RECHECK_SECONDS = 1.0
# Retry-After when the pace is unknown (nothing finished in the last minute) or slow. The
# pace is a minute's average, so it underestimates workers that have just started: a bulk
# import refused then was told to wait 300 s while the backlog drained in well under a
# minute. A retry costs one cached count, so the longest wait is short.
MIN_RETRY_SECONDS, MAX_RETRY_SECONDS = 1, 30


@dataclass(frozen=True)
class Backlog:
    """Episodes waiting (counted up to `limit`, plus one), the limit, and the pace."""

    queued: int
    limit: int
    finished_per_second: float

    @property
    def full(self) -> bool:
        return self.limit > 0 and self.queued >= self.limit

    @property
    def drain_seconds(self) -> float | None:
        """Seconds to extract what waits at the last minute's pace; None when unknown."""
        if self.queued == 0:
            return 0.0
        if self.finished_per_second <= 0:
            return None
        return self.queued / self.finished_per_second

    @property
    def retry_after_seconds(self) -> int:
        """When a refused client should try again: once a tenth of the limit has drained."""
        if self.finished_per_second <= 0:
            return MIN_RETRY_SECONDS * 5
        wait = math.ceil(max(self.queued - 0.9 * self.limit, 1) / self.finished_per_second)
        return min(max(wait, MIN_RETRY_SECONDS), MAX_RETRY_SECONDS)


def measure_backlog(*, session: Session, limit: int, exact: bool = False) -> Backlog:
    """The backlog now; `queued` counts at most limit + 1 episodes unless `exact`."""
    waiting = select(Episode.id).where(Episode.status == "queued")
    if not exact and limit > 0:
        waiting = waiting.limit(limit + 1)
    queued = session.scalar(select(func.count()).select_from(waiting.subquery())) or 0
    since = utcnow() - PACE_WINDOW
    finished = session.scalar(
        select(func.count())
        .select_from(Episode)
        .where(Episode.status == "done", Episode.updated_at >= since)
    )
    return Backlog(int(queued), limit, (finished or 0) / PACE_WINDOW.total_seconds())


_lock = threading.Lock()
_last: tuple[float, Backlog] | None = None


def require_capacity(*, session: Session, limit: int) -> None:
    """Raise OverloadedError while the backlog is full (see the module invariants)."""
    global _last
    if limit <= 0:
        return
    now = time.monotonic()
    with _lock:
        cached = _last
    if cached is None or now - cached[0] >= RECHECK_SECONDS or cached[1].limit != limit:
        backlog = measure_backlog(session=session, limit=limit)
        with _lock:
            _last = (now, backlog)
    else:
        backlog = cached[1]
    if backlog.full:
        raise OverloadedError(
            f"the workers are behind: {backlog.queued:,} or more captures wait "
            f"(pipeline.max_backlog {limit:,}); nothing of this request was stored, "
            "send it again later",
            retry_after_seconds=backlog.retry_after_seconds,
        )


def forget_measured_backlog() -> None:
    """Take the next capacity check from the database (tests, a changed limit)."""
    global _last
    with _lock:
        _last = None
