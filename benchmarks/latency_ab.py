"""Paired A/B of the read path over HTTP: another revision's API and this checkout's API on
one database and one page cache, each request sent to both in alternating order.

Why: the latency benchmark's figures move by ±5 ms at the median and far more at p95
between runs of the same code, with what the machine did before (pages reclaimed from
the page cache, benchmarks/README.md "## Latency"). Two APIs answering the same requests
back to back see the same cache, and the order alternates so neither always gets the
pages the other just read. Both APIs are started alike, and the difference is reported
balanced for the order too (`benchmarks.paired`): answering second was worth 3.9-5.7 ms
at 100k notes in the A/A runs of `benchmarks/results/latency-ab-s32-aa-*.json`. Uses the
data of a `benchmarks.latency` home (load it first with `--load-only`); the other revision
must use the same schema.

    .venv/bin/python -m benchmarks.latency_ab --home /tmp/muma-latency --base-rev HEAD~1
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import Row, fmt, percentile, print_table, write_results
from benchmarks.latency import log, user_plan
from benchmarks.latency import parse_args as latency_args
from benchmarks.latency_load import read_progress
from benchmarks.latency_workload import build_requests, request_path
from benchmarks.paired import paired_difference
from benchmarks.stack import ROOT, BenchStack
from memory.runtime.embedded import free_port


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, required=True, help="a loaded benchmarks.latency home")
    p.add_argument("--base-rev", required=True, help="git revision to compare against")
    p.add_argument("--queries", type=int, default=150, help="requests per size and kind")
    p.add_argument(
        "--kinds",
        default="search,context",
        help="request kinds, comma-separated: search, context, context_uncapped, "
        "filter_kinds, filter_domains, filter_since",
    )
    p.add_argument("--json", type=Path)
    return p.parse_args()


def _spawn_api(stack: BenchStack, checkout: Path, name: str) -> tuple[subprocess.Popen[bytes], str]:
    """An API on `checkout`'s code, on the stack's database and Redis. Both sides are
    started this way, one after the other, rather than one being the stack's own API,
    which starts well before and runs its start-up read-ahead alone."""
    port = free_port()
    env = {**stack.service_env(), "PYTHONPATH": str(checkout)}
    argv = [sys.executable, "-m", "uvicorn", "memory.api.app:app", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*argv, "--port", str(port), "--no-access-log"],
        cwd=checkout,
        env=env,
        stdout=open(stack.home / f"api-{name}.log", "ab"),  # noqa: SIM115 - lives with the process
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            # Any answer will do: /healthz says 503 while no worker runs (none here),
            # after its one-second wait for a worker's reply.
            httpx.get(f"{url}/healthz", timeout=5)
            return process, url
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise SystemExit(f"the {name} API exited; see {stack.home / f'api-{name}.log'}")
        time.sleep(0.5)
    raise SystemExit(f"the {name} API did not answer within 120 s")


Paired = dict[tuple[str, str], dict[str, list]]


def _send_paired(urls: dict[str, str], token: str, warm: list, work: list) -> Paired:
    """{(size, kind): {"base": [ms...], "this": [ms...], "this_first": [bool...]}}, pair i
    at index i. The order alternates, within each size and kind, and in the warm-up."""
    headers = {"Authorization": f"Bearer {token}"}
    clients = {k: httpx.Client(base_url=u, headers=headers, timeout=60) for k, u in urls.items()}
    out: Paired = {}
    try:
        for i, sample in enumerate(warm, start=1):
            for name in _order(i):
                clients[name].post(request_path(sample.kind), json=sample.body).raise_for_status()
        for i, (sample, order) in enumerate(zip(work, balanced_orders(work), strict=True), 1):
            if i % 200 == 0:
                log(f"  {i}/{len(work)} pairs")
            path = request_path(sample.kind)
            empty: dict[str, list] = {"base": [], "this": [], "this_first": []}
            pair = out.setdefault((sample.size, sample.kind), empty)
            pair["this_first"].append(order[0] == "this")
            for name in order:
                started = time.perf_counter()
                clients[name].post(path, json=sample.body).raise_for_status()
                pair[name].append((time.perf_counter() - started) * 1000)
    finally:
        for client in clients.values():
            client.close()
    return out


def _order(i: int) -> tuple[str, str]:
    return ("this", "base") if i % 2 else ("base", "this")


def balanced_orders(work: list) -> list[tuple[str, str]]:
    """Which API each request goes to first, alternating within each size and kind, so
    each has as many pairs in one order as in the other (one more at most)."""
    seen: dict[tuple[str, str], int] = {}
    orders = []
    for sample in work:
        key = (sample.size, sample.kind)
        seen[key] = seen.get(key, 0) + 1
        orders.append(_order(seen[key]))
    return orders


def _rows(results: Paired) -> list[Row]:
    rows = []
    for (size, kind), ms in sorted(results.items()):
        base, this = ms["base"], ms["this"]
        diff = paired_difference(base, this, ms["this_first"])
        rows += [
            Row(f"{size} {kind} base p50 / p95 ms", _p(base)),
            Row(f"{size} {kind} this p50 / p95 ms", _p(this)),
            Row(
                f"{size} {kind} paired base - this, order-balanced", fmt(diff.balanced, unit=" ms")
            ),
            Row(f"{size} {kind} paired median base - this (plain)", fmt(diff.median, unit=" ms")),
            Row(f"{size} {kind} answering second gains", fmt(diff.second_gain, unit=" ms")),
        ]
    return rows


def _p(values: list[float]) -> str:
    return f"{fmt(percentile(values, 50))} / {fmt(percentile(values, 95))}"


def main() -> None:
    args = parse_args()
    latency = latency_args_for(args)
    plan = user_plan(latency)
    checkout = Path(tempfile.mkdtemp(prefix="muma-base-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(checkout), args.base_rev], cwd=ROOT, check=True
    )
    try:
        with BenchStack(workers=0, beat=False, api=False, home=args.home, keep=True) as stack:
            base, base_url = _spawn_api(stack, checkout, "base")
            this, this_url = _spawn_api(stack, ROOT, "this")
            try:
                end = datetime.fromisoformat(read_progress(stack.home)["end"])
                warm, measured = build_requests(plan, latency, end)
                kinds = set(args.kinds.split(","))
                work = [s for s in measured if s.kind in kinds]
                log(f"{len(work)} requests, each to both APIs ({args.base_rev} and this tree)")
                urls = {"base": base_url, "this": this_url}
                results = _send_paired(urls, stack.token, warm, work)
            finally:
                for process in (base, this):
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=30)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(checkout)], cwd=ROOT)
    rows = _rows(results)
    print_table(f"Paired A/B: {args.base_rev} (base) against this tree", rows)
    data: dict[str, Any] = {
        "base_rev": args.base_rev,
        "ms": {f"{size} {kind}": ms for (size, kind), ms in results.items()},
        "rows": [row.__dict__ for row in rows],
    }
    print(f"results: {write_results('latency-ab', data, args.json)}")


def latency_args_for(args: argparse.Namespace) -> argparse.Namespace:
    """The latency benchmark's defaults (same users, seed and questions), this home."""
    saved = sys.argv
    try:
        sys.argv = ["latency", "--home", str(args.home), "--queries", str(args.queries)]
        return latency_args()
    finally:
        sys.argv = saved


if __name__ == "__main__":
    main()
