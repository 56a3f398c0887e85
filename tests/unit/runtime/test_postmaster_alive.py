"""A stop must find a postmaster in any state, not only a ready one."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil

from memory.runtime.embedded import _postmaster_alive


def _pid_file(pgdata: Path, pid: int, status: str) -> None:
    pgdata.mkdir(parents=True, exist_ok=True)
    lines = [str(pid), str(pgdata), "1700000000", "5432", "/tmp", "", "0 0", status]
    (pgdata / "postmaster.pid").write_text("\n".join(lines[:3] if status == "" else lines))


def test_a_live_postmaster_counts_whatever_its_status(tmp_path: Path) -> None:
    for status in ("starting", "stopping", "ready", ""):  # "": a file still being written
        _pid_file(tmp_path / (status or "partial"), os.getpid(), status)
        assert _postmaster_alive(tmp_path / (status or "partial")), status


def test_a_dead_or_missing_postmaster_does_not(tmp_path: Path) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    _pid_file(tmp_path / "dead", finished.pid, "ready")
    assert not _postmaster_alive(tmp_path / "dead")
    assert not _postmaster_alive(tmp_path / "missing")
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "postmaster.pid").write_text("not a pid\n")
    assert not _postmaster_alive(tmp_path / "garbled")


def test_a_killed_postmaster_nobody_reaped_does_not(tmp_path: Path) -> None:
    # A zombie still has its pid: PostgreSQL and pgserver would take it for a live server.
    killed = subprocess.Popen(["sleep", "30"])
    killed.kill()
    try:
        for _ in range(100):
            if psutil.Process(killed.pid).status() == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.02)
        _pid_file(tmp_path / "zombie", killed.pid, "ready")
        assert psutil.pid_exists(killed.pid)
        assert not _postmaster_alive(tmp_path / "zombie")
    finally:
        killed.wait()
