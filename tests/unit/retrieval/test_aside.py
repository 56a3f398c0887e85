"""Reads aside: at most ASIDE_CONNECTIONS at once, never a wait for a slot, and a slot is
given back however the work ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memory.db import ASIDE_CONNECTIONS
from memory.retrieval import aside
from memory.retrieval.aside import start_aside


@pytest.fixture(autouse=True)
def free_slots() -> None:
    """Every slot free at the start: a read of an earlier test in this process (a context
    answered at its deadline) may still be finishing a route aside."""
    taken = [aside._SLOTS.acquire(timeout=30) for _ in range(ASIDE_CONNECTIONS)]
    for _ in range(sum(taken)):
        aside._SLOTS.release()
    assert all(taken), "a read aside held its slot for 30 s"


@contextmanager
def fake_transaction(opened: list[str]) -> Iterator[str]:
    opened.append(threading.current_thread().name)
    yield "session"


def test_work_runs_in_its_own_transaction_on_an_aside_thread() -> None:
    opened: list[str] = []
    pending = start_aside(
        lambda: fake_transaction(opened),  # type: ignore[arg-type, return-value]
        lambda session: (session, threading.current_thread().name),
    )
    assert pending is not None
    session, thread = pending.result(timeout=5)
    assert session == "session" and thread.startswith("aside")
    assert opened == [thread]


def test_without_a_free_slot_the_caller_is_told_at_once_and_slots_come_back() -> None:
    release = threading.Event()
    started = threading.Barrier(ASIDE_CONNECTIONS + 1)

    def hold(_session: object) -> int:
        started.wait(timeout=5)
        release.wait(timeout=5)
        return 1

    opened: list[str] = []
    held = [
        start_aside(lambda: fake_transaction(opened), hold)  # type: ignore[arg-type, return-value]
        for _ in range(ASIDE_CONNECTIONS)
    ]
    assert all(p is not None for p in held)
    started.wait(timeout=5)  # every slot is taken and its work running
    assert start_aside(lambda: fake_transaction(opened), hold) is None  # type: ignore[arg-type, return-value]
    release.set()
    assert [p.result(timeout=5) for p in held if p] == [1] * ASIDE_CONNECTIONS
    # All slots are back: as many again can start.
    again = [
        start_aside(lambda: fake_transaction(opened), lambda s: 2)  # type: ignore[arg-type, return-value]
        for _ in range(ASIDE_CONNECTIONS)
    ]
    assert [p.result(timeout=5) for p in again if p] == [2] * ASIDE_CONNECTIONS


def test_a_failing_work_gives_its_slot_back_and_raises_to_the_waiter() -> None:
    def fail(_session: object) -> None:
        raise RuntimeError("statement timeout")

    for _ in range(ASIDE_CONNECTIONS + 1):
        pending = start_aside(lambda: fake_transaction([]), fail)  # type: ignore[arg-type, return-value]
        assert pending is not None
        with pytest.raises(RuntimeError, match="statement timeout"):
            pending.result(timeout=5)


def test_the_answer_is_given_before_the_transaction_ends() -> None:
    """The waiter gets the rows without waiting for the COMMIT of a read; the slot
    comes back only once the transaction has ended."""
    ending = threading.Event()
    ended = threading.Event()

    @contextmanager
    def slow_to_end() -> Iterator[str]:
        yield "session"
        ending.wait(timeout=5)  # the COMMIT's round trip, held open
        ended.set()

    held = [start_aside(slow_to_end, lambda s: 3) for _ in range(ASIDE_CONNECTIONS)]  # type: ignore[arg-type]
    assert [p.result(timeout=1) for p in held if p] == [3] * ASIDE_CONNECTIONS
    assert not ended.is_set()
    assert start_aside(slow_to_end, lambda s: 4) is None  # type: ignore[arg-type]  # slots still held
    ending.set()
    assert ended.wait(timeout=5)
    again = start_aside(lambda: fake_transaction([]), lambda s: 5)  # type: ignore[arg-type, return-value]
    for _ in range(50):  # the last slot is released just after the transaction ends
        if again is not None:
            break
        time.sleep(0.05)
        again = start_aside(lambda: fake_transaction([]), lambda s: 5)  # type: ignore[arg-type, return-value]
    assert again is not None and again.result(timeout=5) == 5


def test_a_transaction_that_fails_to_open_raises_to_the_waiter() -> None:
    @contextmanager
    def unavailable() -> Iterator[str]:
        raise RuntimeError("database unavailable")
        yield "session"  # pragma: no cover

    pending = start_aside(unavailable, lambda s: 1)  # type: ignore[arg-type]
    assert pending is not None
    with pytest.raises(RuntimeError, match="database unavailable"):
        pending.result(timeout=5)


def test_a_failing_work_reaches_the_waiter_as_its_transaction_gave_it() -> None:
    """session_scope turns a lost connection into a TransientError on its way out: the
    waiter sees that error, not the driver's."""

    @contextmanager
    def translating() -> Iterator[str]:
        try:
            yield "session"
        except ConnectionError as exc:
            raise TimeoutError("database unavailable") from exc

    def lose_connection(_session: object) -> None:
        raise ConnectionError("server closed the connection")

    pending = start_aside(translating, lose_connection)  # type: ignore[arg-type]
    assert pending is not None
    with pytest.raises(TimeoutError, match="database unavailable"):
        pending.result(timeout=5)
