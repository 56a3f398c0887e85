"""Pooled connections: a dead one is replaced at checkout, a busy one is not pinged."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, create_engine, text

from memory.db import dispose_engines, session_scope
from memory.db_liveness import install_liveness_check, is_suspect
from memory.db_url import sqlalchemy_url

pytestmark = pytest.mark.integration


def _terminate(database_url: str, pid: int) -> None:
    """End backend `pid` from another session and wait until it has exited, so its FATAL
    message and the socket's end are on the client's side."""
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 5
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, f"backend {pid} did not exit"
            time.sleep(0.02)


def _backend_pid() -> int:
    with session_scope() as session:
        return int(session.scalar(text("SELECT pg_backend_pid()")))


@pytest.fixture()
def counted_engine(database_url: str) -> Iterator[Any]:
    """Makes one-connection pools with the check installed and their pings counted."""
    engines: list[Engine] = []

    def make(idle_ping_seconds: float = 10.0) -> tuple[Engine, list[int]]:
        engine = create_engine(
            sqlalchemy_url(database_url), pool_pre_ping=False, pool_size=1, max_overflow=0
        )
        install_liveness_check(engine, idle_ping_seconds=idle_ping_seconds)
        pings: list[int] = []
        ping = engine.dialect.do_ping

        def counting_ping(dbapi_connection: Any) -> bool:
            pings.append(dbapi_connection.info.backend_pid)
            return ping(dbapi_connection)

        engine.dialect.do_ping = counting_ping  # type: ignore[method-assign]
        engines.append(engine)
        return engine, pings

    yield make
    for engine in engines:
        engine.dispose()


def _pid_of(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(text("SELECT pg_backend_pid()")))


def test_the_service_engine_replaces_a_connection_the_server_ended(database_url: str) -> None:
    dispose_engines()  # one pooled connection, so the next checkout must take it
    ended = _backend_pid()
    _terminate(database_url, ended)

    assert _backend_pid() != ended  # no OperationalError: the pool opened another


def test_a_connection_in_use_again_at_once_is_not_pinged(counted_engine: Any) -> None:
    engine, pings = counted_engine()
    pids = {_pid_of(engine) for _ in range(5)}

    assert len(pids) == 1
    assert pings == []


def test_a_connection_the_server_ended_is_pinged_and_replaced(
    database_url: str, counted_engine: Any
) -> None:
    engine, pings = counted_engine()
    ended = _pid_of(engine)
    _terminate(database_url, ended)
    replaced = _pid_of(engine)

    assert pings == [ended]  # the ping that failed; the fresh connection is not pinged
    assert replaced != ended


def test_a_connection_idle_past_the_limit_is_pinged_and_kept(counted_engine: Any) -> None:
    engine, pings = counted_engine(idle_ping_seconds=0.0)
    first = _pid_of(engine)

    assert _pid_of(engine) == first
    assert pings == [first]


def test_a_server_ended_session_is_suspect_and_a_quiet_one_is_not(database_url: str) -> None:
    with psycopg.connect(database_url) as quiet:
        assert not is_suspect(quiet)
    assert is_suspect(quiet)  # closed by the client

    ended = psycopg.connect(database_url)
    _terminate(database_url, ended.info.backend_pid)
    assert is_suspect(ended)
    ended.close()


def test_the_service_engine_does_not_ping_a_connection_back_from_work(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.db import get_engine

    dispose_engines()
    _backend_pid()  # the pool's one connection, now checked in
    engine = get_engine()
    pings: list[int] = []
    ping = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda c: pings.append(1) or ping(c))

    assert len({_backend_pid() for _ in range(3)}) == 1
    assert pings == []
