"""A service's CPU time as the benchmarks read it keeps what its exited children used:
PostgreSQL's backends close with their connections, Celery replaces pool children."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.stack import _tree_cpu

# A child that burns 0.3 s of CPU and exits; the parent reaps it and lives on.
PARENT = (
    "import subprocess, sys, time\n"
    "child = 'import time\\nwhile time.process_time() < 0.3: pass'\n"
    "subprocess.run([sys.executable, '-c', child])\n"
    "print('reaped', flush=True)\n"
    "time.sleep(30)\n"
)


def test_an_exited_childs_cpu_still_counts_for_its_tree() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "reaped"
        assert _tree_cpu(parent.pid) >= 0.25
        # The benchmark's own process is read without its children (the services).
        assert _tree_cpu(parent.pid, children=False) < 0.25
    finally:
        parent.kill()
        parent.wait()
