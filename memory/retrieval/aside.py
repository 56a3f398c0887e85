"""Reads a request runs beside its own transaction, on a second connection.

Why: a search's routes are independent statements, each CPU in one PostgreSQL backend,
and a request waits on one at a time while the machine's other core idles; the dense
route (after the query's embedding) and the window BM25 route can run beside BM25
(`memory.retrieval.candidates`).

Invariants: a request never waits for a second connection, so no request holds one
connection while queueing for another: a slot is taken without blocking (at most
`ASIDE_CONNECTIONS` reads aside at once, the size of their pool) and without one the
caller does the work in its own transaction (`start_aside` answers None). The work reads
only; its transaction is its own, so it sees a snapshot taken a little later than the
request's (a note it returns that the request cannot load is dropped there).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TypeAlias, TypeVar

from sqlalchemy.orm import Session

from memory.db import ASIDE_CONNECTIONS

T = TypeVar("T")
# Opens the second transaction: `session_scope(aside=True)` with the request's settings.
OpenSession: TypeAlias = Callable[[], AbstractContextManager[Session]]

_SLOTS = threading.BoundedSemaphore(ASIDE_CONNECTIONS)
_EXECUTOR = ThreadPoolExecutor(max_workers=ASIDE_CONNECTIONS, thread_name_prefix="aside")


def start_aside(open_session: OpenSession, work: Callable[[Session], T]) -> Future[T] | None:
    """`work(session)` started in a transaction of its own, or None when every slot is
    taken (then the caller runs it itself)."""
    if not _SLOTS.acquire(blocking=False):
        return None

    def run() -> T:
        try:
            with open_session() as session:
                return work(session)
        finally:
            _SLOTS.release()

    try:
        return _EXECUTOR.submit(run)
    except RuntimeError:  # the executor is shutting down (the process is exiting)
        _SLOTS.release()
        return None
