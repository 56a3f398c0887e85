"""Search capacity: searches and contexts per second at 1, 4, 20 and 50 concurrent clients.

The service runs with its defaults (the API as `muma up` starts it: one process per core);
LoCoMo conversations are captured through the API first (two by default, 788 turns). Then,
for each number of clients and for /v1/search and /v1/context in turn, that many clients
ask LoCoMo's questions about those conversations back to back for `--seconds`. Reported
per row: requests/s, latency p50/p95/p99, the share of contexts cut short by their
150 ms budget (answered, but with what was ready), the CPU each part of the service spent per
request (API processes, PostgreSQL, workers: what access recording costs them), and the
PostgreSQL sessions opened per 1,000 requests (a pooled service opens none in steady
state).

    python -m benchmarks.capacity                      # 1, 4, 20, 50 clients, 20 s each
    python -m benchmarks.capacity --clients 20 --seconds 60
"""

from __future__ import annotations

import argparse
import itertools
import threading
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg

from benchmarks.common import fmt, summarise, write_results
from benchmarks.locomo import AGENT, ingest
from benchmarks.locomo_data import load as load_locomo
from benchmarks.stack import BenchStack
from benchmarks.turns import DEFAULT_LOCOMO

ROUTES = {"search": "/v1/search", "context": "/v1/context"}
# A context cut short by its 150 ms budget (an empty or partial block): counted apart.
TIMED_OUT = 0
SETTLE_SECONDS = 10.0
SERVICES = ("api", "postgres", "worker1")


def _body(route: str, user_id: str, question: str) -> dict[str, Any]:
    if route == "search":
        return {"user_id": user_id, "agent_id": AGENT, "query": question, "top_k": 10}
    return {"user_id": user_id, "agent_id": AGENT, "prompt": question}


def _client(
    stack: BenchStack,
    route: str,
    asks: list[tuple[str, str]],
    stop: threading.Event,
    seen: list[tuple[int, float]],
) -> None:
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for user_id, question in itertools.cycle(asks):
            if stop.is_set():
                return
            started = time.monotonic()
            response = client.post(ROUTES[route], json=_body(route, user_id, question))
            status = response.status_code
            if status == 200 and route == "context" and response.json()["timed_out"]:
                status = TIMED_OUT
            seen.append((status, time.monotonic() - started))


def _sessions(database_url: str) -> int:
    """Sessions PostgreSQL has opened on the service's database so far."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def measure(
    stack: BenchStack, route: str, clients: int, seconds: float, asks: list[tuple[str, str]]
) -> dict[str, Any]:
    stop, seen = threading.Event(), []
    threads = [
        threading.Thread(target=_client, args=(stack, route, asks[i::clients] or asks, stop, seen))
        for i in range(clients)
    ]
    cpu_before, sessions_before = stack.cpu_seconds(), _sessions(stack.database_url)
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(60)
    elapsed = time.monotonic() - started
    cpu_after, sessions_after = stack.cpu_seconds(), _sessions(stack.database_url)
    answered = [s for status, s in seen if status in (200, TIMED_OUT)]
    count = max(len(seen), 1)
    return {
        "route": route,
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": len(seen),
        "per_second": len(answered) / elapsed,
        "latency": summarise(answered),
        "errors": len(seen) - len(answered),
        "timed_out_share": sum(status == TIMED_OUT for status, _ in seen) / count,
        "cpu_ms_per_request": {
            name: (cpu_after.get(name, 0.0) - cpu_before.get(name, 0.0)) * 1000 / count
            for name in SERVICES
        },
        # Sessions this benchmark's own probe opened (one per reading) are left out.
        "sessions_per_1000": (sessions_after - sessions_before - 1) * 1000 / count,
    }


COLUMNS = (
    "route", "clients", "req/s", "p50 ms", "p95 ms", "p99 ms", "timed out",
    "CPU ms: API", "PostgreSQL", "worker", "sessions / 1k",
)  # fmt: skip


def table(results: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (printed, and for benchmarks/README.md)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]
    for r in results:
        latency, cpu = r["latency"], r["cpu_ms_per_request"]
        cells = [r["route"], str(r["clients"]), fmt(r["per_second"])]
        cells += [fmt(latency[q] * 1000) for q in ("p50", "p95", "p99")]
        cells += [fmt(r["timed_out_share"] * 100, 0, " %") if r["route"] == "context" else ""]
        cells += [fmt(cpu[name]) for name in SERVICES] + [fmt(r["sessions_per_1000"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 20, 50])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument(
        "--api-workers",
        type=int,
        default=None,
        help="API processes (default: as `muma up`, one per core); another is a labelled variant",
    )
    parser.add_argument("--name", default=f"capacity-{datetime.now(UTC):%Y-%m-%d}")
    args = parser.parse_args()
    turns, questions = load_locomo(DEFAULT_LOCOMO)
    chosen = sorted({t.conversation for t in turns})[: args.conversations]
    turns = [t for t in turns if t.conversation in chosen]
    asks = [(q.conversation, q.question) for q in questions if q.conversation in chosen]
    results = []
    with BenchStack(api_workers=args.api_workers) as stack:
        print(f"capturing {len(turns)} turns of {len(chosen)} conversations …", flush=True)
        ingest_seconds = ingest(stack, turns)
        # What the capture left behind (vacuum, the worker's last tasks) settles, and
        # every API process's read path warms up, before anything is measured.
        time.sleep(SETTLE_SECONDS)
        measure(stack, "search", 4, SETTLE_SECONDS, asks)
        for clients in args.clients:
            for route in ROUTES:
                result = measure(stack, route, clients, args.seconds, asks)
                results.append(result)
                p95 = fmt(result["latency"]["p95"] * 1000)
                print(f"  {route}, {clients} clients: {fmt(result['per_second'])}/s, p95 {p95} ms")
    setting = "defaults" if args.api_workers is None else f"{stack.api_workers} API processes"
    print(f"Capacity, {setting} (CPU per request: the API's processes, PostgreSQL, the worker)")
    print(table(results))
    data = {
        "setting": setting,
        "api_workers": stack.api_workers,
        "turns": len(turns),
        "ingest_seconds": ingest_seconds,
        "questions": len(asks),
        "results": results,
    }
    print(f"results: {write_results(args.name, data)}")


if __name__ == "__main__":
    main()
