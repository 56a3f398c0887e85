"""`ReadsInFlight`: a warmer waits while searches run and for a quiet moment after them,
never longer than its bound."""

from __future__ import annotations

import threading
import time

from memory.retrieval.foreground import ReadsInFlight


def test_with_no_read_ever_it_is_quiet_at_once() -> None:
    started = time.monotonic()
    assert ReadsInFlight().wait_quiet(quiet=5.0, max_wait=5.0)
    assert time.monotonic() - started < 1.0


def test_a_read_in_progress_is_waited_for_until_the_bound() -> None:
    reads = ReadsInFlight()
    with reads.reading():
        started = time.monotonic()
        assert not reads.wait_quiet(quiet=0.0, max_wait=0.2)
        assert time.monotonic() - started >= 0.2


def test_the_wait_ends_a_quiet_moment_after_the_last_read() -> None:
    reads = ReadsInFlight()
    entered, release = threading.Event(), threading.Event()

    def read() -> None:
        with reads.reading():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=read)
    thread.start()
    entered.wait(5)
    started = time.monotonic()  # before the timer: the read ends 0.2 s after this at least
    threading.Timer(0.2, release.set).start()
    assert reads.wait_quiet(quiet=0.1, max_wait=10.0)
    # The read ended after ~0.2 s, then 0.1 s without one.
    assert time.monotonic() - started >= 0.3
    thread.join()


def test_reads_overlapping_keep_it_busy_until_the_last_ends() -> None:
    now = [100.0]
    reads = ReadsInFlight(clock=lambda: now[0])
    with reads.reading():
        with reads.reading():
            pass
        # One read still runs: not quiet, however long ago the other ended.
        now[0] += 50.0
        assert not reads.wait_quiet(quiet=1.0, max_wait=0.0)
    assert not reads.wait_quiet(quiet=1.0, max_wait=0.0)  # it just ended
    now[0] += 1.0
    assert reads.wait_quiet(quiet=1.0, max_wait=0.0)
