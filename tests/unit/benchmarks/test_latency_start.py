"""`benchmarks.latency_start`: which requests a freshly started API gets, and in what order."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest

from benchmarks.latency import parse_args as latency_args
from benchmarks.latency_start import KINDS, _round_robin, parse_args
from benchmarks.latency_workload import build_requests

END = datetime(2026, 12, 1, tzinfo=UTC)
PLAN = {"u100k-00": 100_000, "u100k-01": 100_000, "u10k-00": 10_000}


def _measured(monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.setattr(sys, "argv", ["latency", "--queries", "20", "--measure-users", "2"])
    return build_requests(PLAN, latency_args(), END)[1]


def test_by_default_every_kind_is_sent_and_filtered_searches_among_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["latency_start", "--home", "/tmp/h"])
    kinds = parse_args().kinds
    assert kinds == KINDS and {"filter_kinds", "filter_domains", "filter_since"} <= set(kinds)
    work = _round_robin(_measured(monkeypatch), PLAN, kinds)
    assert {s.kind for s in work} == set(KINDS)
    # Only the largest users, taking turns.
    assert {s.user_id for s in work} == {"u100k-00", "u100k-01"}
    assert [s.user_id for s in work[:4]] == ["u100k-00", "u100k-01"] * 2


def test_session_30s_workload_is_searches_and_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "argv", ["latency_start", "--home", "/tmp/h", "--kinds", "search,context"]
    )
    kinds = parse_args().kinds
    work = _round_robin(_measured(monkeypatch), PLAN, kinds)
    assert kinds == ("search", "context") and {s.kind for s in work} == set(kinds)


@pytest.mark.parametrize("bad", ["search,nope", ","])
def test_unknown_kinds_are_refused(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setattr(sys, "argv", ["latency_start", "--home", "/tmp/h", "--kinds", bad])
    with pytest.raises(SystemExit) as refused:
        parse_args()
    assert refused.value.code == 2
