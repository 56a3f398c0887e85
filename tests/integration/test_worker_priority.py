"""A process below normal priority (a worker) takes its PostgreSQL backends down with it;
the API's backends keep theirs, and a backend that cannot be verified is left alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text

from memory.db import session_scope
from memory.runtime.priority import lower_backend_priority

ROOT = Path(__file__).resolve().parents[2]

# Opens a pooled connection through memory.db, prints its backend's pid, and keeps the
# connection open until its stdin closes.
_HOLD_CONNECTION = """
import os, sys
from sqlalchemy import text
from memory.db import session_scope
os.nice(int(sys.argv[1]))
with session_scope() as session:
    print(session.execute(text("SELECT pg_backend_pid()")).scalar_one(), flush=True)
    sys.stdin.read()
"""


@contextmanager
def _backend_of_process_at(nice: int, database_url: str) -> Iterator[int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_CONNECTION, str(nice)],
        cwd=ROOT,
        env={**env, "MUMA_DATABASE_URL": database_url},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield int(child.stdout.readline())
    finally:
        child.communicate(timeout=30)


def test_a_background_process_lowers_its_backend(database_url: str) -> None:
    with _backend_of_process_at(10, database_url) as backend_pid:
        assert os.getpriority(os.PRIO_PROCESS, backend_pid) == 10


def test_a_normal_process_leaves_its_backend_alone(database_url: str) -> None:
    with _backend_of_process_at(0, database_url) as backend_pid:
        assert os.getpriority(os.PRIO_PROCESS, backend_pid) == 0
    with session_scope() as session:  # this process, at normal priority
        own = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        assert os.getpriority(os.PRIO_PROCESS, own) == 0


def test_a_pid_that_is_not_the_connections_backend_is_left_alone(database_url: str) -> None:
    """Over a Unix socket the backend must be a child of the listening postmaster."""
    with session_scope() as session:
        connection = session.connection().connection.dbapi_connection
        assert connection is not None
        stranger = subprocess.Popen(["sleep", "30"])
        try:
            note = _lowered_from_niced_child(stranger.pid, connection.pgconn.socket)
            assert "not verifiably" in note
            assert os.getpriority(os.PRIO_PROCESS, stranger.pid) == 0
        finally:
            stranger.kill()
            stranger.wait()


def test_loopback_tcp_backend_is_recognised_by_its_process_title() -> None:
    """Over TCP the backend's title must name this end's port, as PostgreSQL's does."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        port = client.getsockname()[1]
        titled = _process_titled(f"postgres: u db 127.0.0.1({port}) idle")
        other = _process_titled(f"postgres: u db 127.0.0.1({port + 1}) idle")
        try:
            assert "nice 0 -> 10" in _lowered_from_niced_child(titled.pid, client.fileno())
            assert os.getpriority(os.PRIO_PROCESS, titled.pid) == 10
            assert "not verifiably" in _lowered_from_niced_child(other.pid, client.fileno())
            assert os.getpriority(os.PRIO_PROCESS, other.pid) == 0
        finally:
            client.close()
            for process in (titled, other):
                process.kill()
                process.wait()


def _process_titled(title: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["bash", "-c", f'exec -a "{title}" sleep 30'])


def _lowered_from_niced_child(pid: int, fd: int) -> str:
    """lower_backend_priority run by a forked child at nice 10 (this process keeps 0)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked child
        os.close(read_end)
        os.nice(10)
        os.write(write_end, str(lower_backend_priority(pid, fd)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        note = reader.read()
    os.waitpid(child, 0)
    return note
