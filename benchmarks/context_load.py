"""/v1/context under concurrent agents: does the block still come back about timeout_ms
after the request was sent?

Runs against a home `benchmarks.locomo --home DIR` ingested. At each level of
`--concurrency` that many clients (threads, a connection each) send LoCoMo questions to
/v1/context back to back, `--requests` per level in all, with the default 150 ms budget.
Per level: the client's p50 / p95 / max, the service's own `took_ms` p50 / p95 / max,
contexts cut short, recall inside the block (what cutting short costs), and CPU ms per
request in the API, PostgreSQL, the clients and the whole machine. The clients share the
machine's cores with the service, as an agent host's plugin would.

    .venv/bin/python -m benchmarks.context_load --home /tmp/locomo
    .venv/bin/python -m benchmarks.context_load --home /tmp/locomo --concurrency 1,16 \\
        --api-env MUMA_RETRIEVAL__CONTEXT_SKIP_FILLER=false
"""

from __future__ import annotations

import random
import statistics
import threading
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import Row, fmt, percentile, print_table, write_results
from benchmarks.locomo import TENANT
from benchmarks.locomo_data import (
    Question,
    add_api_env,
    kept_home_parser,
    load,
    parse_kept_home,
    recall,
)
from benchmarks.locomo_prompts import post_context
from benchmarks.stack import BenchStack

Answer = tuple[Question, dict[str, Any], float]


def send_all(base_url: str, headers: dict[str, str], chunk: list[Question]) -> list[Answer]:
    """One client's questions, one after another on one connection."""
    answers: list[Answer] = []
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        for q in chunk:
            answer, took = post_context(client, q.conversation, q.question)
            answers.append((q, answer, took))
    return answers


def run_level(
    base_url: str, headers: dict[str, str], questions: list[Question], concurrency: int
) -> dict[str, Any]:
    """`concurrency` clients splitting `questions` between them, all started together."""
    answers: list[Answer] = []
    lock = threading.Lock()

    def client(chunk: list[Question]) -> None:
        done = send_all(base_url, headers, chunk)
        with lock:
            answers.extend(done)

    threads = [
        threading.Thread(target=client, args=(questions[i::concurrency],))
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return summarise(concurrency, answers)


def summarise(concurrency: int, answers: list[Answer]) -> dict[str, Any]:
    client_ms = [took for _, _, took in answers]
    service_ms = [answer["took_ms"] for _, answer, _ in answers]
    recalls = []
    for q, answer, _ in answers:
        block = [{s["metadata"].get("dia_id") for s in m["sources"]} for m in answer["memories"]]
        recalls.append(recall(q.evidence, block, len(block)))

    def spread(values: list[float]) -> dict[str, float]:
        return {"p50": percentile(values, 50), "p95": percentile(values, 95), "max": max(values)}

    return {
        "concurrency": concurrency,
        "requests": len(answers),
        "client_ms": spread(client_ms),
        "service_ms": spread(service_ms),
        "timed_out": sum(bool(answer["timed_out"]) for _, answer, _ in answers),
        "context_recall": round(statistics.fmean(recalls), 4),
    }


def run(
    home: Path, data: Path, levels: list[int], requests: int, seed: int, api_env: dict[str, str]
) -> dict[str, Any]:
    _, questions = load(data)
    sample = random.Random(seed).sample(questions, min(requests, len(questions)))
    # The service's defaults; with no worker the accesses it records wait in the queue,
    # so the kept home is the same for the next run.
    env = dict(api_env)
    with BenchStack(env=env, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False) as st:
        headers = {"Authorization": f"Bearer {st.token}"}
        send_all(st.api_url, headers, sample[:20])  # warm-up: every user's files read
        results = []
        for concurrency in levels:
            before = st.cpu_seconds()
            level = run_level(st.api_url, headers, sample, concurrency)
            level["cpu_ms_per_request"] = cpu_per_request(before, st.cpu_seconds(), len(sample))
            results.append(level)
            print_report(results[-1:])
    return {"requests": len(sample), "seed": seed, "api_env": env, "levels": results}


def cpu_per_request(
    before: dict[str, float], after: dict[str, float], requests: int
) -> dict[str, float]:
    """CPU ms per request by service (the API, PostgreSQL, these clients, the machine):
    where a level's time goes when the cores are the limit."""
    names = {"api": "api", "postgres": "postgres", "benchmark": "clients"}
    names["machine (all busy CPU, kernel too)"] = "machine"
    return {
        label: round((after[name] - before[name]) * 1000 / requests, 2)
        for name, label in names.items()
        if name in before and name in after
    }


def print_report(levels: list[dict[str, Any]]) -> None:
    def spread(values: dict[str, float]) -> str:
        return f"{fmt(values['p50'])} / {fmt(values['p95'])} / {fmt(values['max'])}"

    rows = [
        Row(
            f"{r['concurrency']} concurrent ({r['requests']} requests)",
            f"client {spread(r['client_ms'])}; service {spread(r['service_ms'])}; "
            f"{r['timed_out']} cut short; recall {r['context_recall']:.3f}; CPU ms per "
            "request " + ", ".join(f"{k} {v}" for k, v in r.get("cpu_ms_per_request", {}).items()),
        )
        for r in levels
    ]
    print_table("/v1/context under concurrency (ms p50 / p95 / max)", rows)


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--concurrency", default="1,4,8,16", help="comma-separated levels")
    parser.add_argument("--requests", type=int, default=400, help="questions per level")
    parser.add_argument("--seed", type=int, default=11)
    add_api_env(parser)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    try:
        levels = [int(level) for level in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency takes comma-separated numbers, not {args.concurrency!r}")
    if not levels or min(levels) < 1:
        parser.error("--concurrency levels must be at least 1")
    result = run(args.home, args.data, levels, args.requests, args.seed, args.api_env)
    print_report(result["levels"])
    print(f"results: {write_results('context-load', result, args.json)}")


if __name__ == "__main__":
    main()
