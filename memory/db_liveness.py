"""Pooled connections checked at checkout without a round trip on a busy path.

Invariant: a connection handed out by the pool is one whose server end has not said it is
gone. A server that ends a session (a restart, `pg_terminate_backend`, an idle timeout)
writes its FATAL message or closes the socket, so an idle connection's socket with
anything to read is suspect; so is one that sat idle longer than `idle_ping_seconds`, and
one psycopg already knows is closed. Only those are pinged; a failed ping invalidates that
connection and the pool opens another (SQLAlchemy retries the checkout), so the caller
never sees the dead one.

Why not `pool_pre_ping`: it pings every checkout, and a search checks out two connections
(its own and the dense route's beside it): two round trips to PostgreSQL per search that
answer nothing. The saving is below what a paired A/B over HTTP resolves
(`benchmarks/results/latency-ab-s24.json`); the round trips are simply not needed.
"""

from __future__ import annotations

import select
import time
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError

# Past this much idle time a connection is pinged even with a quiet socket: a peer that
# vanished without closing (a dropped NAT entry, a killed host) leaves nothing to read.
IDLE_PING_SECONDS = 10.0
_CHECKED_IN_AT = "muma_checked_in_at"


def install_liveness_check(engine: Engine, *, idle_ping_seconds: float = IDLE_PING_SECONDS) -> None:
    """Check `engine`'s pooled connections at checkout (see the module's invariant);
    create the engine with `pool_pre_ping=False`, since this replaces it."""

    @event.listens_for(engine, "checkin")
    def _stamp(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        checked_in_at = record.info.pop(_CHECKED_IN_AT, None)
        if checked_in_at is None:
            return  # fresh from connect: nothing can have happened to it yet
        idle = time.monotonic() - checked_in_at
        if idle < idle_ping_seconds and not is_suspect(dbapi_connection):
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # any failure of a ping means the connection is unusable
            raise DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


def is_suspect(dbapi_connection: psycopg.Connection[Any]) -> bool:
    """True when psycopg knows the connection is closed, or its socket holds unread input
    (an idle session receives nothing unless the server is ending it)."""
    if dbapi_connection.closed:
        return True
    try:
        fd = dbapi_connection.pgconn.socket
    except psycopg.OperationalError:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))
