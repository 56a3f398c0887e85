"""The API's processes: one per core by default, behind one port, their samples in one
directory that each start clears of earlier processes' files (and of nothing else)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memory.cli.main import cli
from memory.runtime.api_process import api_environment, usable_cores
from memory.runtime.up import UpOptions, service_specs


def test_up_starts_one_api_process_per_core_by_default(tmp_path: Path) -> None:
    env = {"MUMA_HOME": str(tmp_path)}
    [api] = [s for s in service_specs(UpOptions(), env, tmp_path) if s.name == "api"]
    assert api.argv[api.argv.index("--workers") + 1] == str(usable_cores())
    assert api.env["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path / "run" / "api-metrics")
    three = service_specs(UpOptions(api_workers=3), env, tmp_path)[0]
    assert three.argv[three.argv.index("--workers") + 1] == "3"


def test_a_start_clears_earlier_samples_and_nothing_else(tmp_path: Path) -> None:
    kept = tmp_path / "metrics"
    kept.mkdir()
    (kept / "histogram_123.db").write_bytes(b"old")
    (kept / "notes.txt").write_text("mine")
    env = api_environment({"PROMETHEUS_MULTIPROC_DIR": str(kept)}, tmp_path)
    assert env["PROMETHEUS_MULTIPROC_DIR"] == str(kept)
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]


def test_serve_runs_uvicorn_in_its_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[str], dict[str, Any]]] = []
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "samples"))
    monkeypatch.setattr("os.execve", lambda path, argv, env: calls.append((path, argv, env)))
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--port", "9000"])
    assert result.exit_code == 0, result.output
    [(_, argv, env)] = calls
    assert argv[1:4] == ["-m", "uvicorn", "memory.api.app:app"]
    assert argv[argv.index("--port") + 1] == "9000"
    assert argv[argv.index("--workers") + 1] == str(usable_cores())
    assert env["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path / "samples")
    assert (tmp_path / "samples").is_dir()
