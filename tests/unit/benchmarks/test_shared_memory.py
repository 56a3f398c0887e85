"""The latency benchmark says whether PostgreSQL's buffer pool was still filling while it
measured: shared memory (Linux's Shmem) before and after the measured requests."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import shared_memory_mb
from benchmarks.latency_report import _shared_memory_row

MEMINFO = "MemTotal:       24000000 kB\nShmem:           2097152 kB\nShmemHugePages:  0 kB\n"


def test_shmem_is_read_in_megabytes(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    assert shared_memory_mb(meminfo) == 2048.0


def test_an_unreadable_or_foreign_meminfo_gives_none(tmp_path: Path) -> None:
    assert shared_memory_mb(tmp_path / "missing") is None
    other = tmp_path / "other"
    other.write_text("MemTotal: 1 kB\n")
    assert shared_memory_mb(other) is None
    broken = tmp_path / "broken"
    broken.write_text("Shmem:\n")
    assert shared_memory_mb(broken) is None


def test_the_row_shows_the_growth_or_says_unknown() -> None:
    row = _shared_memory_row({"before_http": 1624.4, "after_http": 2718.0})
    assert row.value == "1,624 / 2,718 (+1,094)"
    assert _shared_memory_row({"before_http": None, "after_http": 10.0}).value == "unknown"
    assert _shared_memory_row(None).value == "unknown"
