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
request's (a note it returns that the request cannot load is dropped there). Its answer
is given as soon as the work returns, before the transaction ends: the request does not
wait for the COMMIT of a transaction that wrote nothing.
"""

from __future__ import annotations

import logging
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

log = logging.getLogger(__name__)
_SLOTS = threading.BoundedSemaphore(ASIDE_CONNECTIONS)
_EXECUTOR = ThreadPoolExecutor(max_workers=ASIDE_CONNECTIONS, thread_name_prefix="aside")


def start_aside(open_session: OpenSession, work: Callable[[Session], T]) -> Future[T] | None:
    """`work(session)` started in a transaction of its own, or None when every slot is
    taken (then the caller runs it itself). The future holds work's answer as soon as
    work returns, its error once the transaction has rolled back; the slot comes back
    once the transaction has ended."""
    if not _SLOTS.acquire(blocking=False):
        return None
    answer: Future[T] = Future()

    def run() -> None:
        try:
            if not answer.set_running_or_notify_cancel():
                return  # cancelled before it started: nothing to read
            with open_session() as session:
                answer.set_result(work(session))
        except BaseException as exc:
            # As the transaction gave it (session_scope turns a lost connection into a
            # TransientError), unless the answer was given and only its end failed.
            if not answer.done():
                answer.set_exception(exc)
            else:
                log.warning("a read aside failed to end its transaction: %s", exc)
        finally:
            _SLOTS.release()

    try:
        _EXECUTOR.submit(run)
    except RuntimeError:  # the executor is shutting down (the process is exiting)
        _SLOTS.release()
        return None
    return answer
