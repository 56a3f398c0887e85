"""The concurrency benchmark splits its questions between its clients and sums up what
each level saw: client and service times, contexts cut short, recall inside the block."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks.context_load import summarise
from benchmarks.locomo_data import INGESTED_MARKER, Question, add_api_env, parse_kept_home


def _question(evidence: list[str]) -> Question:
    return Question("conv-1", "Where did Ann go?", 4, tuple(evidence))


def _answer(dia_ids: list[str], took_ms: float, timed_out: bool) -> dict:
    memories = [{"sources": [{"metadata": {"dia_id": d}}]} for d in dia_ids]
    return {"memories": memories, "took_ms": took_ms, "timed_out": timed_out}


def test_a_level_reports_times_cut_short_contexts_and_recall() -> None:
    answers = [
        (_question(["D1:1", "D1:2"]), _answer(["D1:1", "D9:9"], 20.0, False), 25.0),
        (_question(["D1:3"]), _answer([], 150.0, True), 180.0),
    ]
    level = summarise(4, answers)
    assert level["requests"] == 2 and level["timed_out"] == 1
    assert level["client_ms"]["max"] == 180.0 and level["service_ms"]["max"] == 150.0
    # half of the first question's evidence, none of the second's
    assert level["context_recall"] == 0.25


def test_api_env_settings_are_parsed_and_malformed_ones_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / INGESTED_MARKER).write_text("")
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path)
    add_api_env(parser)
    monkeypatch.setattr("sys.argv", ["x", "--home", str(tmp_path), "--api-env", "A=1=2"])
    assert parse_kept_home(parser).api_env == {"A": "1=2"}
    monkeypatch.setattr("sys.argv", ["x", "--home", str(tmp_path), "--api-env", "A"])
    with pytest.raises(SystemExit):
        parse_kept_home(parser)


def test_cpu_per_request_is_each_services_difference_over_the_requests() -> None:
    from benchmarks.context_load import cpu_per_request

    machine = "machine (all busy CPU, kernel too)"
    before = {"api": 1.0, "postgres": 2.0, "benchmark": 0.5, machine: 10.0}
    after = {"api": 3.0, "postgres": 2.5, "benchmark": 1.0, machine: 14.0}
    assert cpu_per_request(before, after, 100) == {
        "api": 20.0,
        "postgres": 5.0,
        "clients": 5.0,
        "machine": 40.0,
    }
