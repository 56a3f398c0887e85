"""Overload: capture clients and search clients at once, for a fixed time, with defaults.

What a gateway serving many people does to the service: `--capture-clients` clients post
one conversation turn each (LoCoMo turns, else synthetic), as fast as the service
answers, resending a 429 or 503 after its Retry-After with the same idempotency key (as
the OpenClaw plugin does); `--search-clients` clients ask /v1/search questions about the
same conversations. Reported: acknowledgement latency (p50/p95/p99), the share of 429s,
capture-to-searchable time (p50/p95) of what was acknowledged, search latency and
throughput, and the maintenance and ingest queue depths over time.

    python -m benchmarks.overload                    # 20 + 20 clients, 120 s
    python -m benchmarks.overload --seconds 60 --capture-clients 10 --search-clients 10
"""

from __future__ import annotations

import argparse
import itertools
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks.common import (
    Row,
    add_setting_variant,
    fmt,
    markdown_table,
    print_table,
    setting_variant,
    summarise,
    write_results,
)
from benchmarks.locomo_data import load as load_locomo
from benchmarks.pipeline_probe import DonePoller
from benchmarks.stack import BenchStack
from benchmarks.turns import DEFAULT_LOCOMO, Turn, locomo_turns, synthetic_turns
from memory.runtime.up import UpOptions

# kombu keeps a queue's priority steps (tasks.app: 0, 3, 6, 9) under separate keys.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)


@dataclass
class Tally:
    """What the clients saw; appended to from many threads (list.append is atomic)."""

    acks: list[float] = field(default_factory=list)  # seconds to a 202
    capture_statuses: list[int | str] = field(default_factory=list)
    searches: list[float] = field(default_factory=list)  # seconds to a 200
    search_statuses: list[int | str] = field(default_factory=list)


def queue_depth(client: Any, name: str) -> int:
    keys = [name if p == 0 else f"{name}{PRIORITY_SEPARATOR}{p}" for p in PRIORITY_STEPS]
    return sum(int(client.llen(key)) for key in keys)


def _post(client: httpx.Client, route: str, body: dict[str, Any]) -> tuple[int | str, float, Any]:
    started = time.monotonic()
    try:
        response = client.post(route, json=body)
    except httpx.HTTPError as exc:
        return type(exc).__name__, time.monotonic() - started, None
    return response.status_code, time.monotonic() - started, response


def capture_client(
    stack: BenchStack, turns: list[Turn], tally: Tally, poller: DonePoller, stop: threading.Event
) -> None:
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for turn in turns:
            body = {"episodes": [turn.episode(run_id="overload")]}
            while not stop.is_set():
                sent_at = time.time()
                status, seconds, response = _post(client, "/v1/episodes", body)
                tally.capture_statuses.append(status)
                if status == 202:
                    tally.acks.append(seconds)
                    poller.watch(response.json()["episode_ids"][0], sent_at)
                    break
                wait = response.headers.get("Retry-After", "1") if response is not None else "1"
                stop.wait(min(float(wait), 5.0))
            if stop.is_set():
                return


def search_client(
    stack: BenchStack, questions: list[tuple[str, str]], tally: Tally, stop: threading.Event
) -> None:
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for user_id, question in itertools.cycle(questions):
            if stop.is_set():
                return
            body = {"user_id": user_id, "agent_id": "bench-agent", "query": question, "top_k": 10}
            status, seconds, _ = _post(client, "/v1/search", body)
            tally.search_statuses.append(status)
            if status == 200:
                tally.searches.append(seconds)


def sample_queues(
    stack: BenchStack, stop: threading.Event, samples: list[dict[str, float]]
) -> None:
    import redis

    client = redis.Redis.from_url(stack.redis_url)
    started = time.monotonic()
    while not stop.wait(1.0):
        samples.append(
            {
                "t": round(time.monotonic() - started, 1),
                "maintenance": queue_depth(client, "maintenance"),
                "ingest": queue_depth(client, "ingest"),
                "embed": queue_depth(client, "embed"),
            }
        )


def _turns_and_questions(users: int) -> tuple[list[list[Turn]], list[tuple[str, str]]]:
    """Per user its turns in order, and (user, question) pairs for the searchers: LoCoMo's
    own questions about each conversation, else a turn's words."""
    questions: list[tuple[str, str]] = []
    if DEFAULT_LOCOMO.exists():
        turns = locomo_turns(DEFAULT_LOCOMO, user_prefix="overload")
        _, asked = load_locomo(DEFAULT_LOCOMO)
        questions = [(f"overload-{q.conversation}", q.question) for q in asked]
    else:
        turns = synthetic_turns(users * 600, users=users)
    by_user: dict[str, list[Turn]] = {}
    for turn in turns:
        by_user.setdefault(turn.user_id, []).append(turn)
    streams = list(by_user.values())[:users]
    chosen = {stream[0].user_id for stream in streams}
    questions = [(user, q) for user, q in questions if user in chosen]
    questions = questions or [(s[0].user_id, t.text) for s in streams for t in s[::7]]
    return streams, questions


def run(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    streams, questions = _turns_and_questions(users=10)
    tally, stop, samples = Tally(), threading.Event(), []
    with BenchStack(env=env, concurrency=UpOptions().workers) as stack:
        poller = DonePoller(stack.database_url)
        poller.start()
        clients = [
            threading.Thread(
                target=capture_client,
                args=(
                    stack,
                    streams[i % len(streams)][i // len(streams) :: 2],
                    tally,
                    poller,
                    stop,
                ),
            )
            for i in range(args.capture_clients)
        ]
        clients += [
            threading.Thread(
                target=search_client,
                args=(stack, questions[i :: args.search_clients] or questions, tally, stop),
            )
            for i in range(args.search_clients)
        ]
        sampler = threading.Thread(target=sample_queues, args=(stack, stop, samples))
        started = time.monotonic()
        for thread in [*clients, sampler]:
            thread.start()
        print(f"{len(clients)} clients for {args.seconds} s …", flush=True)
        time.sleep(args.seconds)
        stop.set()
        for thread in [*clients, sampler]:
            thread.join(60)
        elapsed = time.monotonic() - started
        drained = poller.wait_drained(args.drain_seconds)
        poller.stop()
        finished = poller.finished()
    searchable = [f.observed_seconds for f in finished if f.searchable]
    captures = len(tally.capture_statuses)
    return {
        "settings": env or "defaults",
        "seconds": round(elapsed, 1),
        "capture_clients": args.capture_clients,
        "search_clients": args.search_clients,
        "ack_seconds": summarise(tally.acks),
        "acknowledged_per_second": len(tally.acks) / elapsed,
        "capture_statuses": _counts(tally.capture_statuses),
        "share_429": tally.capture_statuses.count(429) / captures if captures else 0.0,
        "searchable_seconds": summarise(searchable),
        "not_searchable": len(finished) - len(searchable),
        "not_searchable_outcomes": _counts(
            [f"{f.status}/{f.decision}" for f in finished if not f.searchable]
        ),
        "drained": drained,
        "search_seconds": summarise(tally.searches),
        "searches_per_second": len(tally.searches) / elapsed,
        "search_statuses": _counts(tally.search_statuses),
        "queues": samples,
        "maintenance_max": max((s["maintenance"] for s in samples), default=0),
    }


def _counts(statuses: list[int | str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for status in statuses:
        out[str(status)] = out.get(str(status), 0) + 1
    return out


def rows(result: dict[str, Any]) -> list[Row]:
    ack, found, search = (
        result["ack_seconds"],
        result["searchable_seconds"],
        result["search_seconds"],
    )
    ms = 1000
    return [
        Row("captures acknowledged / s", fmt(result["acknowledged_per_second"])),
        Row(
            "ack p50 / p95 / p99",
            f"{fmt(ack['p50'] * ms)} / {fmt(ack['p95'] * ms)} / {fmt(ack['p99'] * ms)} ms",
        ),
        Row("capture answers that were 429", fmt(result["share_429"] * 100, 1, " %")),
        Row("capture statuses", str(result["capture_statuses"])),
        Row("capture → searchable p50 / p95", f"{fmt(found['p50'])} / {fmt(found['p95'])} s"),
        Row("everything acknowledged drained", str(result["drained"])),
        Row("searches / s", fmt(result["searches_per_second"])),
        Row(
            "search p50 / p95 / p99",
            f"{fmt(search['p50'] * ms)} / {fmt(search['p95'] * ms)} / {fmt(search['p99'] * ms)} ms",
        ),
        Row("search statuses", str(result["search_statuses"])),
        Row("maintenance queue, most seen", str(result["maintenance_max"])),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--capture-clients", type=int, default=20)
    parser.add_argument("--search-clients", type=int, default=20)
    parser.add_argument("--drain-seconds", type=float, default=900.0)
    parser.add_argument("--name", default=f"overload-{datetime.now(UTC):%Y-%m-%d}")
    add_setting_variant(parser)
    args = parser.parse_args()
    env = setting_variant(parser, args)
    result = run(args, env)
    table = rows(result)
    clients = f"{args.capture_clients} capture + {args.search_clients} search clients"
    title = f"Overload: {clients}, {result['seconds']} s"
    print_table(title + (f" ({env})" if env else ", defaults"), table)
    print(markdown_table(table))
    print(f"results: {write_results(args.name, result)}")


if __name__ == "__main__":
    main()
