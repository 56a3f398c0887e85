"""A worker a test session starts dies when the session is killed, and with no other
signal: left alive, it would consume the next session's tasks from its broker database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

# A stand-in for the test session: starts a child in a session of its own, as the worker
# fixtures do, prints its pid, and waits to be killed.
SESSION = (
    "import subprocess, sys, time\n"
    "from tests.support.lifeline import lifeline_argv\n"
    "argv = [sys.executable, '-c', 'import time; time.sleep(60)']\n"
    "argv = lifeline_argv(argv) if {wrap} else argv\n"
    "child = subprocess.Popen(argv, start_new_session=True)\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _orphan_after_kill(wrap: bool) -> bool:
    """Whether the session's child outlives the session's SIGKILL by 5 s."""
    code = SESSION.format(wrap=wrap)
    session = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE)
    assert session.stdout is not None
    child = int(session.stdout.readline())
    try:
        time.sleep(0.5)  # the lifeline has exec'd the command
        assert _alive(child)
        session.send_signal(signal.SIGKILL)
        session.wait()
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _alive(child)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal")
def test_a_child_on_a_lifeline_dies_with_a_killed_session_and_keeps_its_pid() -> None:
    assert not _orphan_after_kill(wrap=True)
    # Without the lifeline the same child outlives the session: the test can fail.
    assert _orphan_after_kill(wrap=False)
