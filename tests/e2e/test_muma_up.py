"""`muma up` as a user runs it: embedded PostgreSQL and Redis, every child supervised."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from memory.runtime.embedded import free_port
from memory.runtime.up import usable_cores
from tests.support.up_process import ROOT, read_until, start_up, stop_up, up_env, wait_healthy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _home_processes(home: Path, settle: float = 5.0) -> list[str]:
    """Processes still running for `home` once `settle` seconds have passed: a PostgreSQL
    child can still be exiting for a moment after `pg_ctl stop -w` has returned."""
    deadline = time.monotonic() + settle
    while True:
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            cmdline = " ".join(proc.info.get("cmdline") or [])
            if str(home) in cmdline and proc.info.get("status") != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid} {cmdline[:200]}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _autogroup_nice(pid: int) -> int | None:
    path = Path(f"/proc/{pid}/autogroup")
    return int(path.read_text().split()[-1]) if path.is_file() else None


def _wait_for_worker_priority(up_pid: int, timeout: float = 60) -> None:
    """The worker and its pool yield the CPUs (nice 10 by default, and so does the
    worker's autogroup where the kernel has them); the API keeps priority 0."""
    deadline = time.monotonic() + timeout
    while True:
        children = _descendants(up_pid)
        api = next(p for p in children if "uvicorn" in " ".join(p.cmdline()))
        worker = next(p for p in children if "tasks.app worker" in " ".join(p.cmdline()))
        workers = [worker, *worker.children(recursive=True)]
        seen = [p.nice() for p in workers], _autogroup_nice(worker.pid)
        if seen[0] and set(seen[0]) == {10} and seen[1] in (None, 10):
            break
        assert time.monotonic() < deadline, f"worker nice / autogroup nice: {seen}"
        time.sleep(0.5)
    assert api.nice() == 0 and _autogroup_nice(api.pid) in (None, 0)


def _api_processes_serve_one_port_and_metrics_count_them_all(
    url: str, headers: dict[str, str], up_pid: int
) -> None:
    """One API process per core behind one port; /metrics, answered by any one of them,
    counts the requests every one of them served."""
    master = next(p for p in _descendants(up_pid) if "uvicorn" in " ".join(p.cmdline()))
    # uvicorn's processes, not multiprocessing's resource tracker beside them
    serving = [p for p in master.children() if "spawn_main" in " ".join(p.cmdline())]
    assert len(serving) == usable_cores()
    served = 40
    for _ in range(served):  # a new connection each: the processes take turns accepting
        with httpx.Client(timeout=5) as client:
            answer = client.get(f"{url}/v1/system/status", headers=headers)
            assert answer.status_code == 200
    route = 'method="GET",route="/v1/system/status",status="200"'
    series = f"muma_http_request_duration_seconds_count{{{route}}}"
    for _ in range(3):  # whichever process answers the scrape sees them all
        scraped = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
        assert scraped.status_code == 200, scraped.text
        [line] = [line for line in scraped.text.splitlines() if line.startswith(series)]
        assert float(line.rsplit(" ", 1)[1]) == served + 1, line  # +1: the caller's


def test_up_serves_restarts_children_and_stops_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "muma-home"
    port, flower_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    process = start_up(home, port, flower_port)
    printed: list[str] = []
    try:
        # What `muma up` prints works once it is printed: the API answers at once.
        printed += read_until(process, "Press Ctrl-C to stop.")
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        wait_healthy(url, process)
        _wait_for_worker_priority(process.pid)
        credentials = json.loads((home / "credentials.json").read_text())
        assert oct((home / "credentials.json").stat().st_mode & 0o777) == "0o600"
        headers = {"Authorization": f"Bearer {credentials['admin_token']}"}
        status = httpx.get(f"{url}/v1/system/status", headers=headers, timeout=5)
        assert status.status_code == 200 and status.json()["embedding"]["dimension"] == 384
        # The children get the embedded servers' URLs; the status still says what they are.
        assert (status.json()["database"], status.json()["redis"]) == ("embedded", "embedded")
        assert httpx.get(f"http://127.0.0.1:{flower_port}/", timeout=5).status_code == 200
        _api_processes_serve_one_port_and_metrics_count_them_all(url, headers, process.pid)

        # Another command on the same home attaches to the running servers.
        listed = subprocess.run(
            [sys.executable, "-m", "memory.cli.main", "tokens", "list"],
            cwd=ROOT,
            env={**up_env(home), "COLUMNS": "250"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert "local admin" in listed.stdout

        # A crashed child is reported and restarted.
        worker = next(
            p for p in _descendants(process.pid) if "tasks.app worker" in " ".join(p.cmdline())
        )
        worker.kill()
        time.sleep(3)
        wait_healthy(url, process)
        children = _descendants(process.pid)
    finally:
        elapsed = stop_up(process)
    output = "".join(printed) + (process.stdout.read() if process.stdout else "")
    assert "worker exited" in output and "restarting" in output
    assert elapsed < 10, f"stop took {elapsed:.1f}s"
    time.sleep(0.5)
    assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not (left := _home_processes(home)), f"processes left behind: {left}"

    # Start again: the data and the credentials are still there.
    process = start_up(home, port, flower_port)
    try:
        wait_healthy(url, process)
        again = httpx.get(f"{url}/v1/system/status", headers=headers, timeout=5)
        assert again.status_code == 200
    finally:
        stop_up(process)
    assert not (left := _home_processes(home)), f"processes left behind: {left}"


def _flower_task_states(flower_port: int) -> dict[str, set[str]]:
    reply = httpx.get(f"http://127.0.0.1:{flower_port}/api/tasks", timeout=5)
    if reply.status_code != 200:
        return {}
    states: dict[str, set[str]] = {}
    for task in reply.json().values():
        states.setdefault(str(task.get("name")), set()).add(str(task.get("state")))
    return states


def test_beat_under_up_runs_the_periodic_jobs_and_flower_shows_them(tmp_path: Path) -> None:
    """Beat fires the schedule (decay sweep every minute here), the worker runs it, and
    Flower sees each task succeed."""
    home = tmp_path / "muma-home"
    port, flower_port = free_port(), free_port()
    process = start_up(
        home,
        port,
        flower_port,
        MUMA_DECAY__SWEEP_INTERVAL_MINUTES="1",
        MUMA_PIPELINE__STUCK_AFTER_SECONDS="2",
        FLOWER_UNAUTHENTICATED_API="true",  # the test reads Flower's JSON API
    )
    wanted = {
        "tasks.maintenance.requeue_stuck_episodes",
        "tasks.sleep.decay_all_users",
        "tasks.sleep.promote_idle_sessions",
    }
    states: dict[str, set[str]] = {}
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            states = _flower_task_states(flower_port)
            if all("SUCCESS" in states.get(name, set()) for name in wanted):
                break
            time.sleep(2)
    finally:
        stop_up(process)
    missing = {name for name in wanted if "SUCCESS" not in states.get(name, set())}
    assert not missing, f"Flower saw {states}"
