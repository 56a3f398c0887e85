"""A small process supervisor for `muma up`.

Invariants: every child runs in its own process group, so stopping a child stops whatever
it spawned (Celery pool processes, uvicorn reloaders). A child that exits while the
supervisor runs is reported and restarted with a growing delay, and so is a watched server
it did not spawn; on stop every group gets SIGTERM, and SIGKILL whatever is left after
the grace period, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Reporter = Callable[[str], None]


@dataclass
class ProcessSpec:
    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path | None = None


@dataclass
class _Child:
    spec: ProcessSpec
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    started_at: float = 0.0
    log_file: object | None = field(default=None, repr=False)


@dataclass
class Watch:
    """A server the supervisor did not spawn (the embedded PostgreSQL: pg_ctl daemonises
    it): `alive()` is asked every `interval` seconds, and `restart()` brings it back,
    retried with a growing delay while it fails."""

    name: str
    alive: Callable[[], bool]
    restart: Callable[[], object]
    interval: float = 1.0
    failures: int = 0
    next_check: float = 0.0


class Supervisor:
    def __init__(
        self,
        specs: list[ProcessSpec],
        *,
        report: Reporter,
        grace_seconds: float = 6.0,
        watches: list[Watch] | None = None,
    ):
        self._children = [_Child(spec) for spec in specs]
        self._watches = watches or []
        self._report = report
        self._grace = grace_seconds
        self._stopping = False

    def start(self, names: set[str] | None = None) -> None:
        """Spawn the children not started yet (only `names`, when given)."""
        for child in self._children:
            if child.process is None and (names is None or child.spec.name in names):
                self._spawn(child)

    def _spawn(self, child: _Child) -> None:
        spec = child.spec
        output = None
        if spec.log_path is not None:
            spec.log_path.parent.mkdir(parents=True, exist_ok=True)
            output = open(spec.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
            child.log_file = output
        child.process = subprocess.Popen(
            spec.argv,
            env=spec.env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
            start_new_session=True,
        )
        child.started_at = time.monotonic()

    def poll(self) -> None:
        """Restart children that died and watched servers that stopped; called
        periodically by `run`."""
        now = time.monotonic()
        for watch in self._watches:
            if now >= watch.next_check and not self._stopping:
                self._check(watch, now)
        for child in self._children:
            process = child.process
            if process is None:
                if now >= child.next_start and not self._stopping:
                    self._report(f"restarting {child.spec.name}")
                    self._spawn(child)
                continue
            code = process.poll()
            if code is None or self._stopping:
                continue
            # A child that ran a while before dying gets a fresh back-off.
            if now - child.started_at > 60:
                child.restarts = 0
            delay = min(30.0, 2.0**child.restarts)
            child.restarts += 1
            self._report(f"{child.spec.name} exited with code {code}; restarting in {delay:.0f}s")
            child.process = None
            child.next_start = now + delay

    def _check(self, watch: Watch, now: float) -> None:
        watch.next_check = now + watch.interval
        if watch.alive():
            return
        self._report(f"{watch.name} is not running; restarting it")
        try:
            watch.restart()
        except Exception as exc:  # a failed start is retried, never the supervisor's end
            delay = min(30.0, 2.0**watch.failures)
            watch.failures += 1
            watch.next_check = time.monotonic() + delay
            self._report(f"{watch.name} did not restart ({exc}); trying again in {delay:.0f}s")
            return
        watch.failures = 0
        self._report(f"{watch.name} restarted")

    def run(self, should_stop: Callable[[], bool], interval: float = 0.5) -> None:
        while not should_stop():
            self.poll()
            time.sleep(interval)

    def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what outlives the grace period."""
        self._stopping = True
        live = [c for c in self._children if c.process is not None and c.process.poll() is None]
        for child in live:
            _signal_group(child.process, signal.SIGTERM)  # type: ignore[arg-type]
        deadline = time.monotonic() + self._grace
        for child in live:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                child.process.wait(remaining)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                self._report(f"{child.spec.name} did not stop in time; killing it")
        for child in self._children:
            if child.process is not None:
                # Kill the group even if the leader exited: its pool children may linger.
                _signal_group(child.process, signal.SIGKILL)
                child.process.wait()
            if child.log_file is not None:
                child.log_file.close()  # type: ignore[attr-defined]

    def pids(self) -> dict[str, int | None]:
        return {c.spec.name: c.process.pid if c.process else None for c in self._children}


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
