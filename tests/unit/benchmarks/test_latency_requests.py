"""The latency benchmark's requests: a warm-up that never repeats a measured text, drawn
from the measured kinds (or, as before 2c48abc, unfiltered searches only)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from datetime import UTC, datetime

import pytest

from benchmarks.latency_workload import _split, build_requests, request_path

END = datetime(2026, 12, 1, tzinfo=UTC)
PLAN = {"u100k-00": 100_000, "u100k-01": 100_000, "u10k-00": 10_000}


def _args(warmup: int, mix: str = "measured") -> argparse.Namespace:
    return argparse.Namespace(queries=20, measure_users=2, seed=7, warmup=warmup, warmup_mix=mix)


@pytest.mark.parametrize("mix", ["measured", "search"])
def test_warm_up_has_the_asked_requests_per_user_and_none_is_measured(mix: str) -> None:
    warm, measured = build_requests(PLAN, _args(150, mix), END)
    for user_id in PLAN:
        texts = [s.text for s in warm if s.user_id == user_id]
        assert len(texts) == 150 and len(set(texts)) == 150
        # A repeated text would find its query embedding cached and look faster.
        assert not set(texts) & {s.text for s in measured if s.user_id == user_id}


def test_the_search_mix_warms_up_with_unfiltered_searches_only() -> None:
    warm, _ = build_requests(PLAN, _args(150, "search"), END)
    assert {s.kind for s in warm} == {"search"}
    assert all(set(s.body) == {"user_id", "agent_id", "query"} for s in warm)


def test_the_measured_mix_warms_up_every_measured_kind_in_its_proportion() -> None:
    warm, measured = build_requests(PLAN, _args(150), END)
    user_id = "u100k-00"
    mine = Counter(s.kind for s in measured if s.user_id == user_id)
    warmed = Counter(s.kind for s in warm if s.user_id == user_id)
    assert set(warmed) == set(mine) and len(mine) == 6
    for kind, count in mine.items():
        # 150 shared out like the measured counts, to within the rounding of one request.
        assert abs(warmed[kind] - 150 * count / mine.total()) < 1
    # Each kind's body is the measured kind's: the same filter, the same budget.
    bodies = {s.kind: s.body for s in measured if s.user_id == user_id}
    for sample in warm:
        if sample.user_id == user_id:
            text_field = "prompt" if sample.kind.startswith("context") else "query"
            assert {k: v for k, v in sample.body.items() if k != text_field} == {
                k: v for k, v in bodies[sample.kind].items() if k != text_field
            }
    # Interleaved across users and kinds, as the measured requests are.
    assert len({s.user_id for s in warm[:20]}) > 1 and len({s.kind for s in warm[:20]}) > 2


@pytest.mark.parametrize("mix", ["measured", "search"])
def test_the_warm_up_leaves_the_measured_requests_unchanged(mix: str) -> None:
    _, short = build_requests(PLAN, _args(10, "search"), END)
    _, long = build_requests(PLAN, _args(150, mix), END)
    assert [(s.user_id, s.kind, s.text, s.body) for s in short] == [
        (s.user_id, s.kind, s.text, s.body) for s in long
    ]


@pytest.mark.parametrize("total", [0, 1, 7, 150, 151])
def test_the_split_sums_to_the_total(total: int) -> None:
    counts = _split(total, {"search": 10, "context": 10, "a": 3, "b": 3})
    assert sum(counts.values()) == total and all(c >= 0 for c in counts.values())


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


def test_each_request_goes_to_the_endpoint_its_body_is_for() -> None:
    warm, measured = build_requests(PLAN, _args(150), END)
    for sample in warm + measured:
        # A context's body (a prompt) posted to /v1/search would be refused (422).
        assert (request_path(sample.kind) == "/v1/context") == ("prompt" in sample.body)
