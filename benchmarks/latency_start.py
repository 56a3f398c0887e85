"""The read path in an API's first minute: /v1/search and /v1/context right after a start.

Why: the latency benchmark measures after 150 warm-up requests per user, when whatever
the API does in the background after a start (the read-ahead of recent users and of each
user's first search, its slice-graph walks: `memory.retrieval.warm`) is mostly over.
Here a freshly started API gets the largest users' measured requests (100k notes each
on the default home) of `--kinds` back to back, round-robin over the users, for
`--seconds`: each user's first search starts its read-ahead while the others' requests
come in. It reports p50 / p95 per kind and window of `--window` seconds, the requests
answered, and the CPU seconds of each process. The kinds include the filtered searches,
whose slice graphs the latency benchmark's warm-up warms too
(`benchmarks.latency_workload`); `--kinds search,context` is the workload before 2c48abc.

Uses the data of a `benchmarks.latency` home (load it first with `--load-only`). To
compare two revisions, run it from a `git worktree` of the other one, alternating:

    .venv/bin/python -m benchmarks.latency_start --home /tmp/muma-latency
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import Row, fmt, percentile, print_table, write_results
from benchmarks.latency import log, user_plan
from benchmarks.latency import parse_args as latency_args
from benchmarks.latency_load import read_progress
from benchmarks.latency_report import Sample
from benchmarks.latency_workload import build_requests, request_path
from benchmarks.stack import BenchStack

KINDS = ("search", "context", "filter_kinds", "filter_domains", "filter_since")
Answered = list[tuple[float, str, float]]  # (seconds since the first request, kind, ms)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, required=True, help="a loaded benchmarks.latency home")
    p.add_argument("--seconds", type=float, default=60.0, help="how long to send requests")
    p.add_argument("--window", type=float, default=20.0, help="seconds per reported window")
    p.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"comma-separated request kinds among {', '.join(KINDS)} (default: all)",
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        p.error(f"--kinds: unknown {', '.join(unknown) or '(none given)'}; choose from {KINDS}")
    args.kinds = kinds
    return args


def _round_robin(
    measured: list[Sample], plan: dict[str, int], kinds: tuple[str, ...]
) -> list[Sample]:
    """The largest users' requests of `kinds`, one user after another."""
    largest = max(plan.values())
    by_user: dict[str, list[Sample]] = {}
    for sample in measured:
        if plan[sample.user_id] == largest and sample.kind in kinds:
            by_user.setdefault(sample.user_id, []).append(sample)
    queues = [by_user[user] for user in sorted(by_user)]
    return [q[i] for i in range(max(map(len, queues))) for q in queues if i < len(q)]


def _send(url: str, token: str, work: list[Sample], seconds: float) -> Answered:
    """Each request answered, with when it was sent and its client-side milliseconds."""
    answered: Answered = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        started = time.perf_counter()
        for i in range(sys.maxsize):
            at = time.perf_counter()
            if at - started >= seconds:
                break
            sample = work[i % len(work)]
            path = request_path(sample.kind)
            client.post(path, json=sample.body).raise_for_status()
            answered.append((at - started, sample.kind, (time.perf_counter() - at) * 1000))
    return answered


def _rows(answered: Answered, seconds: float, window: float, kinds: tuple[str, ...]) -> list[Row]:
    rows = []
    edges = [w * window for w in range(int(seconds // window) + 1)]
    spans = [(lo, min(lo + window, seconds)) for lo in edges if lo < seconds]
    spans += [(0.0, seconds)] if len(spans) > 1 else []  # the whole run, when not one window
    for kind in kinds:
        for lo, hi in spans:
            ms = [m for t, k, m in answered if k == kind and lo <= t < hi]
            p = f"{fmt(percentile(ms, 50))} / {fmt(percentile(ms, 95))}"
            rows.append(Row(f"{kind} {lo:.0f}-{hi:.0f} s: n, p50 / p95 ms", f"{len(ms)}, {p}"))
    return rows


def main() -> None:
    args = parse_args()
    saved, sys.argv = sys.argv, ["latency", "--home", str(args.home)]
    try:
        latency = latency_args()
    finally:
        sys.argv = saved
    with BenchStack(workers=0, beat=False, home=args.home, keep=True) as stack:
        end = datetime.fromisoformat(read_progress(stack.home)["end"])
        plan = user_plan(latency)
        _, measured = build_requests(plan, latency, end)
        work = _round_robin(measured, plan, args.kinds)
        size = work[0].size
        log(f"{args.seconds:.0f} s of {size} requests right after the API's start")
        before = stack.cpu_seconds()
        answered = _send(stack.api_url, stack.token, work, args.seconds)
        after = stack.cpu_seconds()
    cpu = {name: round(after[name] - before[name], 1) for name in after}
    rows = _rows(answered, args.seconds, args.window, args.kinds)
    rows += [Row(f"CPU seconds: {name}", fmt(value)) for name, value in cpu.items()]
    print_table(f"The read path in an API's first seconds ({size} users)", rows)
    data: dict[str, Any] = {
        "seconds": args.seconds,
        "kinds": list(args.kinds),
        "answered": answered,
        "cpu_seconds": cpu,
        "rows": [row.__dict__ for row in rows],
    }
    print(f"results: {write_results('latency-start', data, args.json)}")


if __name__ == "__main__":
    main()
