"""Children that die with the test session.

A worker or server a test starts runs in a session of its own (so that it can be stopped
as a group), which also lets it outlive a test run killed by a timeout or a signal. A
stray worker keeps consuming its broker database; once the killed run's claim on that
database expires, the next run claims it and the stray takes its tasks, which then never
settle. `lifeline_argv` wraps a command in this script: it asks the kernel to send
SIGTERM when the test process dies (Linux's parent-death signal, kept across exec), then
becomes the command, keeping its pid.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1


def lifeline_argv(argv: list[str]) -> list[str]:
    """`argv`, run so that it receives SIGTERM when this process dies (elsewhere than Linux,
    `argv` unchanged)."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, str(Path(__file__).resolve()), str(os.getpid()), *argv]


def main(parent_pid: int, argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        sys.exit(1)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
