"""The request path's limits on a real PostgreSQL: a bounded wait for a pooled connection,
statements and lock waits cancelled by the server, each a TransientError (503 with
Retry-After on the API), never a 500 after the pool's default 30 s."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy import text

from memory.config import reset_settings_cache
from memory.db import POOL_CONNECTIONS, dispose_engines, limit_statements, session_scope
from memory.errors import TransientError

pytestmark = pytest.mark.integration


@pytest.fixture()
def fresh_engines(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MUMA_API__POOL_WAIT_MS", "300")
    reset_settings_cache()
    dispose_engines(close=True)
    try:
        yield
    finally:
        limit_statements(statement_timeout_ms=0, lock_timeout_ms=0)  # 0: no limit
        monkeypatch.undo()
        reset_settings_cache()
        dispose_engines(close=True)


def test_a_request_waits_for_a_pooled_connection_at_most_pool_wait_ms(
    fresh_engines: None,
) -> None:
    with ExitStack() as held:
        for _ in range(POOL_CONNECTIONS):
            held.enter_context(session_scope()).execute(text("SELECT 1"))
        started = time.monotonic()
        refused = pytest.raises(TransientError, match=r"within 300 ms \(api.pool_wait_ms\)")
        with refused as caught, session_scope() as session:
            session.execute(text("SELECT 1"))
        waited = time.monotonic() - started
    assert caught.value.status_code == 503 and caught.value.retry_after_seconds
    assert 0.3 <= waited < 1.5, waited
    with session_scope() as session:  # the held connections went back to the pool
        assert session.execute(text("SELECT 1")).scalar() == 1


def test_a_statement_past_the_request_budget_is_cancelled_by_the_server(
    fresh_engines: None,
) -> None:
    limit_statements(statement_timeout_ms=200, lock_timeout_ms=100)
    started = time.monotonic()
    with pytest.raises(TransientError, match="statement timeout"), session_scope() as session:
        session.execute(text("SELECT pg_sleep(5)"))
    assert time.monotonic() - started < 2


def test_a_wait_on_a_lock_ends_at_lock_timeout(fresh_engines: None) -> None:
    limit_statements(statement_timeout_ms=5000, lock_timeout_ms=200)
    lock = text("SELECT pg_advisory_xact_lock(46046)")
    with session_scope() as holder:
        holder.execute(lock)
        started = time.monotonic()
        with pytest.raises(TransientError, match="lock timeout"), session_scope() as waiter:
            waiter.execute(lock)
        assert time.monotonic() - started < 2


def _sessions_opened() -> int:
    with session_scope() as session:
        return int(
            session.execute(
                text("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
            ).scalar_one()
        )


def test_concurrent_requests_reuse_the_pools_connections(fresh_engines: None) -> None:
    """In steady state no request opens a connection: the pool keeps what it opened."""
    barrier = threading.Barrier(12)

    def request() -> None:
        with session_scope() as session:
            session.execute(text("SELECT 1"))
            barrier.wait(5)  # all twelve hold a connection at once

    def burst() -> None:
        threads = [threading.Thread(target=request) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)

    burst()  # opens what twelve at once need
    before = _sessions_opened()
    for _ in range(3):
        burst()
    assert _sessions_opened() - before == 0
