"""Beat keeps its schedule file under MUMA_HOME, never in the working directory: in the
image that is root-owned /app, and beat could not start there (and no periodic job ran)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_beat_starts_from_a_working_directory_it_cannot_write(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"  # not created yet: beat makes it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUMA_", "PYTEST"))}
    env.update(
        MUMA_HOME=str(home),
        MUMA_REDIS_URL="redis://127.0.0.1:1/0",  # nothing listens: nothing is ever sent
        PYTHONPATH=str(ROOT),
    )
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tasks.app", "beat", "--loglevel", "INFO"],
        cwd="/proc",  # not writable, not even by root
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(home.glob("celerybeat-schedule*")) and time.monotonic() < deadline:
            assert beat.poll() is None, beat.stdout.read() if beat.stdout else ""
            time.sleep(0.2)
        time.sleep(1)
        assert beat.poll() is None, beat.stdout.read() if beat.stdout else ""
        assert list(home.glob("celerybeat-schedule*")), "no schedule file under MUMA_HOME"
    finally:
        beat.terminate()
        output = beat.communicate(timeout=20)[0]
    assert "beat raised exception" not in output, output
