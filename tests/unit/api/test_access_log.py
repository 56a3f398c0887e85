"""Accesses are gathered per process and published in bounded batches."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

from memory.api.access_log import AccessLog

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def test_a_burst_of_reads_is_one_batch_with_each_memory_once() -> None:
    published: list[dict[str, list[str]]] = []
    log = AccessLog(published.append, flush_seconds=60, cap=3)
    a, b = uuid.uuid4(), uuid.uuid4()
    for n in range(1000):
        log.add([a, b] if n % 2 else [a], T0 + timedelta(milliseconds=n))
    assert published == []  # nothing is sent per read
    assert log.flush() == 2
    [batch] = published
    assert set(batch) == {str(a), str(b)}
    # The latest `cap` times of each memory, in order.
    assert batch[str(a)] == [(T0 + timedelta(milliseconds=n)).isoformat() for n in (997, 998, 999)]
    assert log.flush() == 0 and len(published) == 1  # an empty window sends nothing


def test_the_window_flushes_by_itself() -> None:
    sent = threading.Event()
    log = AccessLog(lambda batch: sent.set(), flush_seconds=0.05, cap=16)
    log.add([uuid.uuid4()], T0)
    assert sent.wait(5)


def test_a_broker_outage_loses_history_not_the_request() -> None:
    def down(batch: dict[str, list[str]]) -> None:
        raise ConnectionError("broker unreachable")

    log = AccessLog(down, flush_seconds=60, cap=16)
    log.add([uuid.uuid4()], T0)
    assert log.flush() == 1  # logged, not raised
