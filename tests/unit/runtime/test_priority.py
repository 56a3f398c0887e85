"""The workers' CPU priority: lowered for the process, and for its autogroup only when the
process leads its own session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory.runtime.priority import AUTOGROUP, autogroup_nice, lower_cpu_priority

ROOT = Path(__file__).resolve().parents[3]


def _lower_in_child(
    nice: int, *, session_leader: bool, start_nice: int = 0, autogroup: str | None = None
) -> dict[str, Any]:
    """Run lower_cpu_priority in a fresh process; return what it reported and saw."""
    code = (
        "import json, os\n"
        "from pathlib import Path\n"
        "from memory.runtime.priority import AUTOGROUP, autogroup_nice, lower_cpu_priority\n"
        f"os.nice({start_nice})\n"
        f"path = Path({autogroup!r}) if {autogroup!r} else AUTOGROUP\n"
        f"report = lower_cpu_priority({nice}, autogroup=path)\n"
        "print(json.dumps({'report': report, 'nice': os.getpriority(os.PRIO_PROCESS, 0),"
        " 'autogroup': autogroup_nice(path), 'leader': os.getsid(0) == os.getpid()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=session_leader,
        check=True,
    )
    return json.loads(done.stdout)


def test_zero_changes_nothing() -> None:
    before = os.getpriority(os.PRIO_PROCESS, 0)
    assert lower_cpu_priority(0) == []
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


def test_session_leader_lowers_itself_and_its_autogroup_file(tmp_path: Path) -> None:
    fake = tmp_path / "autogroup"
    fake.write_text("/autogroup-7 nice 0\n")
    seen = _lower_in_child(10, session_leader=True, autogroup=str(fake))
    assert seen["leader"] and seen["nice"] == 10
    assert fake.read_text() == "10" and seen["autogroup"] == 10
    assert seen["report"] == ["process nice 0 -> 10", "autogroup nice 0 -> 10"]


def test_a_process_in_someone_elses_session_leaves_the_autogroup_alone(tmp_path: Path) -> None:
    fake = tmp_path / "autogroup"
    fake.write_text("/autogroup-7 nice 0\n")
    seen = _lower_in_child(10, session_leader=False, autogroup=str(fake))
    assert not seen["leader"] and seen["nice"] == 10
    assert fake.read_text() == "/autogroup-7 nice 0\n"
    assert seen["report"] == ["process nice 0 -> 10"]


def test_priority_is_never_raised(tmp_path: Path) -> None:
    fake = tmp_path / "autogroup"
    fake.write_text("/autogroup-7 nice 15\n")
    seen = _lower_in_child(10, session_leader=True, start_nice=12, autogroup=str(fake))
    assert seen["nice"] == 12
    assert fake.read_text() == "/autogroup-7 nice 15\n"
    assert seen["report"] == ["autogroup nice already 15"]


@pytest.mark.skipif(not AUTOGROUP.is_file(), reason="this kernel has no autogroup scheduling")
def test_the_kernel_takes_the_autogroup_nice_of_a_new_session() -> None:
    ours = autogroup_nice()
    seen = _lower_in_child(7, session_leader=True)
    assert seen["nice"] == 7 and seen["autogroup"] == 7
    assert autogroup_nice() == ours  # the caller's session is another autogroup
