"""Ingest benchmark (issue 3): conversation turns through the HTTP API and the real pipeline.

Embedded stack (PostgreSQL + pgvector, Redis, uvicorn, Celery workers, beat), ONNX
embedder, no LLM. Phases, in one run:
1. raw embedding throughput of the pipeline's texts, in this process, workers idle
   (measured again after phase 3, so a change of machine load shows);
2. fixed offered load: single-episode POSTs on an open-loop schedule at --rate/s; ack
   latency (from the scheduled send time) and capture-to-searchable (send until an active
   note cites the episode, seen by a 50 ms poller; the worker's processed_at also kept);
3. sustained: the remaining turns in batches as fast as possible; notes/s from the first
   POST until the pipeline has drained.

    .venv/bin/python -m benchmarks.ingest [--turns 5000] [--rate 50] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import RESULTS_DIR, BenchStack, machine_info, print_table, write_results
from benchmarks.embed_raw import measure_raw, pipeline_texts, raw_settings
from benchmarks.ingest_load import open_loop, post_batch
from benchmarks.ingest_report import (
    cpu_delta,
    diagnostic_rows,
    profile_rows,
    result_rows,
    summarise_run,
    write_backlog_csv,
)
from benchmarks.pipeline_probe import BacklogSampler, DonePoller
from benchmarks.profiling import finish_profiles, profile_workers
from benchmarks.turns import DEFAULT_LOCOMO, Turn, load_turns
from memory.config import get_settings


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, default=5000, help="turns in total (default 5000)")
    p.add_argument("--rate", type=float, default=50.0, help="offered load, episodes/s")
    p.add_argument("--latency-turns", type=int, default=2000, help="turns sent at --rate")
    p.add_argument("--batch", type=int, default=100, help="episodes per POST when sustained")
    p.add_argument("--in-flight", type=int, default=2, help="concurrent batch POSTs")
    p.add_argument("--workers", type=int, default=1, help="Celery worker processes")
    p.add_argument("--concurrency", type=int, default=2, help="pool size per worker")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the services, e.g. MUMA_EMBEDDING__THREADS=1",
    )
    p.add_argument("--raw-notes", type=int, default=512, help="notes for phase 1")
    p.add_argument(
        "--raw-threads",
        type=int,
        default=None,
        help="ONNX threads for phase 1 (default: every CPU)",
    )
    p.add_argument("--no-beat", action="store_true", help="do not run celery beat")
    p.add_argument(
        "--worker-nice",
        type=int,
        default=None,
        help="the workers' nice value (MUMA_PIPELINE__WORKER_NICE; default: the setting's)",
    )
    p.add_argument("--drain-timeout", type=float, default=1800.0)
    p.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON")
    p.add_argument("--json", type=Path, default=None, help="results path")
    p.add_argument("--keep", action="store_true", help="keep MUMA_HOME (logs, database)")
    p.add_argument(
        "--profile",
        type=float,
        default=0,
        metavar="SECONDS",
        help="py-spy the API (phase 2) and workers (phase 3) for SECONDS (needs py-spy)",
    )
    return p.parse_args(argv)


# ---------------------------------------------------------------------------- phase 1


def raw_phase(turns: list[Turn], notes: int, threads: int | None) -> dict[str, Any]:
    settings = raw_settings(get_settings(), threads)
    texts = pipeline_texts(turns, settings)
    step = max(1, len(texts) // max(1, notes))
    return measure_raw(texts[::step][:notes], settings)


# ---------------------------------------------------------------------------- phase 2


def latency_phase(
    stack: BenchStack,
    poller: DonePoller,
    bodies: list[dict[str, Any]],
    rate: float,
    drain_timeout: float,
    profile: float = 0,
) -> dict[str, Any]:
    before = stack.cpu_seconds()
    started = time.time()
    profiles = profile_workers(stack.processes, profile, RESULTS_DIR, "api") if profile else []
    acks, achieved = asyncio.run(open_loop(stack.api_url, stack.token, bodies, rate, poller))
    api_profile = finish_profiles(profiles)
    drained = poller.wait_drained(drain_timeout)
    elapsed = time.time() - started
    return {
        "started": started,
        "ended": started + elapsed,
        "offered_rate": rate,
        "achieved_rate": achieved,
        "acks": acks,
        "drained": drained,
        "seconds": elapsed,
        "cpu": cpu_delta(before, stack.cpu_seconds(), elapsed),
        "profile": api_profile,
    }


# ---------------------------------------------------------------------------- phase 3


def sustained_phase(
    stack: BenchStack,
    poller: DonePoller,
    bodies: list[dict[str, Any]],
    batch: int,
    in_flight: int,
    drain_timeout: float,
    profile_seconds: float = 0,
) -> dict[str, Any]:
    before = stack.cpu_seconds()
    profiles = (
        profile_workers(stack.processes, profile_seconds, RESULTS_DIR) if profile_seconds else []
    )
    batches = [bodies[i : i + batch] for i in range(0, len(bodies), batch)]
    headers = {"Authorization": f"Bearer {stack.token}"}
    started = time.time()
    with (
        httpx.Client(base_url=stack.api_url, headers=headers, timeout=120) as client,
        ThreadPoolExecutor(max_workers=in_flight) as pool,
    ):
        futures = [pool.submit(post_batch, client, chunk) for chunk in batches]
        acks = []
        ids: list[str] = []
        for future in futures:
            wall, seconds, episode_ids = future.result()
            acks.append(seconds)
            ids += episode_ids
            for episode_id in episode_ids:
                poller.watch(episode_id, wall)
    posted = time.time()
    drained = poller.wait_drained(drain_timeout)
    finished = poller.finished(ids)
    ends = [f.processed_at or f.observed_at for f in finished]
    end = max(ends) if ends else time.time()
    elapsed = end - started
    notes = sum(1 for f in finished if f.searchable)
    return {
        "started": started,
        "ended": time.time(),
        "episodes": len(ids),
        "notes": notes,
        "batch_acks": acks,
        "post_seconds": posted - started,
        "seconds": elapsed,
        "drained": drained,
        "notes_per_second": notes / elapsed,
        "episodes_per_second": len(finished) / elapsed,
        "cpu": cpu_delta(before, stack.cpu_seconds(), time.time() - started),
        "ids": ids,
        "profile": finish_profiles(profiles),
    }


# ---------------------------------------------------------------------------- main


def warm_up(stack: BenchStack, poller: DonePoller, run_id: str, count: int = 24) -> None:
    """Load the model in every worker child before measuring (a few single POSTs)."""
    bodies = [
        t.episode(run_id=f"{run_id}-warm") for t in load_turns(count, Path("/nonexistent"))[0]
    ]
    asyncio.run(open_loop(stack.api_url, stack.token, bodies, 20.0, poller))
    if not poller.wait_drained(300):
        raise RuntimeError("warm-up episodes did not finish")


def run(args: argparse.Namespace) -> dict[str, Any]:
    turns, source = load_turns(args.turns, args.data)
    env = dict(item.split("=", 1) for item in args.env)
    if args.worker_nice is not None:
        env["MUMA_PIPELINE__WORKER_NICE"] = str(args.worker_nice)
    run_id = uuid.uuid4().hex[:8]
    bodies = [t.episode(run_id=run_id) for t in turns]
    n_lat = min(args.latency_turns, len(bodies))
    with BenchStack(
        workers=args.workers,
        concurrency=args.concurrency,
        env=env,
        beat=not args.no_beat,
        keep=args.keep,
    ) as stack:
        print(f"stack up in {stack.home}; turns: {source}", flush=True)
        embedding = get_settings().embedding.model_dump(exclude={"api_key"})  # as services see it
        print("phase 1: raw embedding throughput (workers idle)", flush=True)
        raw = raw_phase(turns, args.raw_notes, args.raw_threads)
        poller = DonePoller(stack.database_url)
        sampler = BacklogSampler(stack.database_url, stack.redis_url)
        poller.start()
        sampler.start()
        try:
            warm_up(stack, poller, run_id)
            print(f"phase 2: {n_lat} single POSTs at {args.rate}/s", flush=True)
            latency = latency_phase(
                stack, poller, bodies[:n_lat], args.rate, args.drain_timeout, args.profile
            )
            latency["ids"] = [i for ack in latency["acks"] for i in ack["ids"]]
            print(f"phase 3: {len(bodies) - n_lat} turns in batches of {args.batch}", flush=True)
            sustained = sustained_phase(
                stack,
                poller,
                bodies[n_lat:],
                args.batch,
                args.in_flight,
                args.drain_timeout,
                args.profile,
            )
            print("phase 1 again: raw embedding throughput (workers idle)", flush=True)
            raw["after"] = raw_phase(turns, args.raw_notes, args.raw_threads)
        finally:
            poller.stop()
            sampler.stop()
    return summarise_run(
        {**vars(args), "turns": len(turns), "source": source, "env": env, "embedding": embedding},
        raw,
        latency,
        sustained,
        poller,
        sampler,
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    at_start = machine_info()  # the tree and load the services started with
    results = run(args)
    results["load_before"] = at_start["load_average"]
    results["machine_at_start"] = at_start
    rows = result_rows(results)
    print_table(f"MUMA ingest — {results['config']['source']}", rows)
    print_table(
        "Where the time went (CPU share of all CPUs; backlog peaks)", diagnostic_rows(results)
    )
    if profile := profile_rows(results):
        print_table("py-spy: share of samples under each stage", profile)
    results["rows"] = [vars(r) | {"verdict": r.verdict} for r in rows]
    backlog = {phase: results[phase].pop("backlog") for phase in ("latency", "sustained")}
    path = write_results("ingest", results, args.json)
    print(f"results: {path}; backlog timeline: {write_backlog_csv(path, backlog)}")


if __name__ == "__main__":
    main()
