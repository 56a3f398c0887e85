"""A MUMA stack of real processes for e2e tests: Redis, API (uvicorn), worker(s), beat.

Every process runs in its own process group with the shared test database, so a test can
stop Redis, SIGKILL a worker or restart anything, as happens in production.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from memory.runtime.embedded import free_port, redis_argv, wait_for_redis
from tests.support.lifeline import lifeline_argv

ROOT = Path(__file__).resolve().parents[2]


def worker_argv(nodename: str, concurrency: int, *, gossip: bool = False) -> list[str]:
    """A Celery worker on every queue; without gossip and mingle it starts faster."""
    argv = [sys.executable, "-m", "celery", "-A", "tasks.app", "worker"]
    argv += ["-Q", "ingest,embed,llm,maintenance", "-c", str(concurrency)]
    argv += ["-n", nodename, "--loglevel", "INFO"]
    return argv if gossip else [*argv, "--without-gossip", "--without-mingle"]


def wait_for_worker(
    name: str,
    timeout: float = 60,
    app: Any = None,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Return once a worker whose node name contains `name` answers a control ping."""
    if app is None:
        from tasks.app import app
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            replies = app.control.ping(timeout=0.5) or []
        except app.connection_for_write().connection_errors:
            replies = []  # a broker that just restarted can drop the first connections
        if any(name in key for reply in replies for key in reply):
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.3)
    raise RuntimeError(f"worker {name} did not start (see its log)")


class Stack:
    def __init__(self, home: Path, database_url: str, **settings: str) -> None:
        self.home = home
        self.redis_port = free_port()
        self.api_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.api_url = f"http://127.0.0.1:{self.api_port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MUMA_", "PYTEST"))}
        self.env.update(
            {
                "MUMA_HOME": str(home),
                "MUMA_DATABASE_URL": database_url,
                "MUMA_REDIS_URL": self.redis_url,
                **settings,
            }
        )
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        home.mkdir(parents=True, exist_ok=True)

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.home / f"{name}.log", "ab")  # noqa: SIM115 - lives with the process
        process = subprocess.Popen(
            lifeline_argv(argv),
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def start_redis(self) -> None:
        data = self.home / "redis"
        data.mkdir(exist_ok=True)
        self._spawn("redis", redis_argv(data, self.redis_port))
        wait_for_redis(self.redis_url, timeout=10)

    def start_api(self) -> None:
        self._spawn(
            "api",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "memory.api.app:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.api_port),
                "--no-access-log",
            ],
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.api_url}/openapi.json", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"API did not start; see {self.home / 'api.log'}")

    def start_worker(
        self, name: str = "worker", concurrency: int = 2, *, wait: bool = True
    ) -> None:
        """Start a worker; with `wait`, return once it answers a control ping (it consumes)."""
        nodename = f"{name}-{uuid.uuid4().hex[:4]}@{socket.gethostname()}"
        self._spawn(name, worker_argv(nodename, concurrency, gossip=True))
        if wait:
            self.wait_for_worker(name, nodename)

    def revive_worker(self, name: str = "worker") -> bool:
        """Restart a worker that died, as `muma up`'s supervisor (or compose's restart) would.

        kombu 5.x can crash a worker that loses its broker with unacked messages in flight
        ("Unrecoverable error: AttributeError ... 'hostname'" while restoring them).
        """
        if self.processes[name].poll() is None:
            return False
        self.start_worker(name)
        return True

    def wait_for_worker(self, name: str, nodename: str, timeout: float = 90) -> None:
        from celery import Celery

        probe = Celery(broker=self.redis_url)
        try:
            wait_for_worker(nodename, timeout, app=probe, process=self.processes[name])
        finally:
            probe.close()

    def start_beat(self) -> None:
        self._spawn(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tasks.app",
                "beat",
                "--loglevel",
                "INFO",
                "-s",
                str(self.home / "beat-schedule"),
            ],
        )

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.stop(name)
