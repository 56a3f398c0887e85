"""The latency benchmark's requests: a warm-up that never repeats a measured text."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

import pytest

from benchmarks.latency import build_requests

END = datetime(2026, 12, 1, tzinfo=UTC)
PLAN = {"u100k-00": 100_000, "u100k-01": 100_000, "u10k-00": 10_000}


def _args(warmup: int) -> argparse.Namespace:
    return argparse.Namespace(queries=20, measure_users=2, seed=7, warmup=warmup)


def test_warm_up_has_the_asked_searches_per_user_and_none_is_measured() -> None:
    warm, measured = build_requests(PLAN, _args(150), END)
    for user_id in PLAN:
        texts = [s.text for s in warm if s.user_id == user_id]
        assert len(texts) == 150 and len(set(texts)) == 150
        # A repeated text would find its query embedding cached and look faster.
        assert not set(texts) & {s.text for s in measured if s.user_id == user_id}
    assert all(s.kind == "search" for s in warm)


def test_the_warm_up_leaves_the_measured_requests_unchanged() -> None:
    _, short = build_requests(PLAN, _args(10), END)
    _, long = build_requests(PLAN, _args(150), END)
    assert [(s.user_id, s.kind, s.text) for s in short] == [
        (s.user_id, s.kind, s.text) for s in long
    ]


def test_no_warm_up() -> None:
    warm, measured = build_requests(PLAN, _args(0), END)
    assert warm == [] and measured


def test_extra_environment_is_key_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.latency import parse_args

    monkeypatch.setattr(sys, "argv", ["latency", "--env", "MUMA_X=1", "--env", "MUMA_Y=a=b"])
    assert parse_args().env == ["MUMA_X=1", "MUMA_Y=a=b"]
    for bad in ("MUMA_X", "=1"):
        monkeypatch.setattr(sys, "argv", ["latency", "--env", bad])
        with pytest.raises(SystemExit) as refused:
            parse_args()
        assert refused.value.code == 2
