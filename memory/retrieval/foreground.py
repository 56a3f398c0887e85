"""The reads this process is answering, so that background warming waits for a quiet moment.

Why: on 2 cores a 100k-note user's search keeps about 1.2 cores busy (per request of
~35 ms, the API spent 14-21 ms of CPU and PostgreSQL 17-25 ms; commit 2a03ab1), so
whatever runs beside it takes from it. The read-ahead's slice-graph walks
(`memory.retrieval.graph_walk`) ran beside an API's first searches; waiting for a quiet
moment moved about 3.5 s of PostgreSQL's CPU out of an API's first minute of
back-to-back requests (`benchmarks/latency_start.py`,
`benchmarks/results/latency-start-s30-*.json`).

Invariants: a read's bookkeeping is two short critical sections, nothing else on the
request path; `wait_quiet` returns within `max_wait` seconds whatever the traffic, so a
warmer under steady load still moves on, one step per `max_wait`.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator


class ReadsInFlight:
    """Counts the reads in progress and remembers when the last one ended."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self._active = 0
        self._last_end = -math.inf

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Marks the enclosed block as a read in progress."""
        with self._changed:
            self._active += 1
        try:
            yield
        finally:
            with self._changed:
                self._active -= 1
                self._last_end = self._clock()
                self._changed.notify_all()

    def wait_quiet(self, *, quiet: float, max_wait: float) -> bool:
        """Block until no read has been in progress for `quiet` seconds, or `max_wait`
        seconds have passed; True when it was quiet."""
        deadline = self._clock() + max_wait
        with self._changed:
            while True:
                now = self._clock()
                if self._active == 0 and now - self._last_end >= quiet:
                    return True
                if now >= deadline:
                    return False
                # While a read runs its end wakes us; after one, the quiet's remainder.
                remaining = quiet - (now - self._last_end) if self._active == 0 else math.inf
                self._changed.wait(min(deadline - now, remaining))
