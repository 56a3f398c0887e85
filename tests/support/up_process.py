"""`muma up` as a child process of a test: started on its own home, waited for, stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.support.lifeline import lifeline_argv

ROOT = Path(__file__).resolve().parents[2]


def up_env(home: Path) -> dict[str, str]:
    """The test's environment without its MUMA_ and pytest settings, on `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUMA_", "PYTEST"))}
    env["MUMA_HOME"] = str(home)
    return env


def start_up(home: Path, port: int, flower_port: int, **env: str) -> subprocess.Popen[str]:
    up = ["-m", "memory.cli.main", "up", "--port", str(port), "--flower-port", str(flower_port)]
    return subprocess.Popen(
        lifeline_argv([sys.executable, *up]),
        cwd=ROOT,
        env={**up_env(home), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_healthy(url: str, process: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("healthz did not answer 200 in time")


def read_until(process: subprocess.Popen[str], marker: str, timeout: float = 180) -> list[str]:
    """The lines `muma up` printed up to and including the one holding `marker`."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert found.wait(timeout), "".join(lines)
    return lines


def stop_up(process: subprocess.Popen[str]) -> float:
    """SIGINT, as Ctrl-C; the seconds `muma up` took to stop."""
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(20)
    return time.monotonic() - started
