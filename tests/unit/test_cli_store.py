"""A `muma` command on a home that `muma up` never ran in says so in one line and exits
non-zero; it used to initialise an empty server there and ask for `muma db upgrade`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("args", [["stats", "--user", "alice"], ["doctor"], ["tokens", "list"]])
def test_a_home_without_a_store_is_named_and_left_alone(tmp_path: Path, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MUMA_DATABASE_URL", "MUMA_HOME")}
    home = tmp_path / "nowhere"
    run = [sys.executable, "-c", "from memory.cli.main import main; main()", *args]
    done = subprocess.run(
        run, env={**env, "MUMA_HOME": str(home)}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"Error: no MUMA store in {home}: start one there with `muma up`, set MUMA_HOME to "
        "the home `muma up` runs in, or set MUMA_DATABASE_URL"
    ]
    assert not (home / "pg").exists()


def test_doctor_says_why_no_worker_can_be_asked(tmp_path: Path) -> None:
    """No `muma up` running and no broker configured: the workers row says what to do, not
    the placeholder broker's connection error."""
    from memory.cli.doctor import NO_BROKER, workers_check
    from memory.config import load_settings

    alone = load_settings(home=tmp_path, redis_url=None, broker_url=None)
    assert workers_check(alone) == {"ok": False, "detail": NO_BROKER}
    configured = load_settings(home=tmp_path, redis_url="redis://127.0.0.1:2/0")
    assert workers_check(configured)["detail"] != NO_BROKER  # asked: its own answer
