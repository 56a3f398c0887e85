"""The read path's accesses, gathered per API process and recorded in batches.

Invariants: at most one batch is published per `retrieval.access_flush_seconds` per
process, whatever the rate of searches; a batch holds each memory once, with at most
`retrieval.access_batch_cap` access times (the latest); publishing never blocks or fails
a request (the answer has been sent; access history is best effort); what is gathered
when the process exits is published then.
"""

from __future__ import annotations

import atexit
import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

log = logging.getLogger(__name__)

Publish = Callable[[dict[str, list[str]]], None]


class AccessLog:
    def __init__(self, publish: Publish, *, flush_seconds: float, cap: int) -> None:
        self._publish = publish
        self._flush_seconds = flush_seconds
        self._cap = cap
        self._lock = threading.Lock()
        self._pending: dict[str, list[str]] = defaultdict(list)
        self._timer: threading.Timer | None = None

    def add(self, note_ids: list[uuid.UUID], at: datetime) -> None:
        """Gather one read's accesses; the first of a window starts its flush timer."""
        stamp = at.isoformat()
        with self._lock:
            for note_id in note_ids:
                times = self._pending[str(note_id)]
                times.append(stamp)
                if len(times) > self._cap:
                    del times[0]
            if self._timer is None:
                self._timer = threading.Timer(self._flush_seconds, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> int:
        """Publish what was gathered as one batch; returns the memories in it."""
        with self._lock:
            batch, self._pending = dict(self._pending), defaultdict(list)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None
        if batch:
            try:
                self._publish(batch)
            except Exception as exc:  # a broker outage loses access history, nothing else
                log.warning("could not record %d memories' accesses: %s", len(batch), exc)
        return len(batch)


def _publish_batch(batch: dict[str, list[str]]) -> None:
    from tasks.maintenance import record_access_batch

    record_access_batch.apply_async((batch,), retry=False)


_LOG: AccessLog | None = None
_LOG_LOCK = threading.Lock()


def access_log() -> AccessLog:
    """This process's access log, created on first use with the settings then."""
    global _LOG
    with _LOG_LOCK:
        if _LOG is None:
            from memory.config import get_settings

            retrieval = get_settings().retrieval
            _LOG = AccessLog(
                _publish_batch,
                flush_seconds=retrieval.access_flush_seconds,
                cap=retrieval.access_batch_cap,
            )
            atexit.register(_LOG.flush)
        return _LOG
