"""LoCoMo evidence-recall benchmark through the real API, pipeline and read path.

Each conversation is ingested as its own user through POST /v1/episodes (speaker, text,
image caption, the session date as occurred_at, dia_id in metadata; no LLM); every
category 1-4 question then goes to /v1/search and /v1/context. In the same run: BM25 and
dense baselines over raw turns, and an ablation of the read path (in process, same DB).

    .venv/bin/python -m benchmarks.locomo --data ../shared/eval/locomo10.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    Row,
    add_setting_variant,
    fmt,
    percentile,
    post_captures,
    print_table,
    setting_variant,
    write_results,
)
from benchmarks.locomo_data import (
    CATEGORIES,
    DEFAULT_DATA,
    INGESTED_MARKER,
    Question,
    Turn,
    load,
    recall,
)
from benchmarks.locomo_eval import (
    ablation_variants,
    bm25_baseline,
    dense_baseline,
    evaluate,
    inprocess_retriever,
)
from benchmarks.stack import BenchStack

AGENT = "locomo"
TENANT = "bench"
# Deterministic scoring for the research tools that compare variants on one kept home, in
# process (locomo_rerank, locomo_conflicts, used_notes): not what users get, so never the
# headline; benchmarks.locomo, context_load and locomo_prompts run the service's defaults.
RESEARCH_ENV = {
    "MUMA_RETRIEVAL__RECORD_ACCESS": "false",
    "MUMA_ACTIVATION__NOISE_ENABLED": "false",
}


def ingest(stack: BenchStack, turns: list[Turn], batch: int = 100) -> float:
    """POST every turn as an episode, session by session; return seconds until drained."""
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {stack.token}"}
    by_session: dict[tuple[str, int], list[Turn]] = defaultdict(list)
    for turn in turns:
        by_session[(turn.conversation, turn.session)].append(turn)
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for _, items in sorted(by_session.items()):
            for start in range(0, len(items), batch):
                body = {"episodes": [_episode(t) for t in items[start : start + batch]]}
                post_captures(client, body)
        wait_drained(client)
    return time.perf_counter() - started


def _episode(turn: Turn) -> dict[str, Any]:
    metadata: dict[str, Any] = {"dia_id": turn.dia_id}
    if turn.caption:
        metadata["blip_caption"] = turn.caption
    return {
        "user_id": turn.conversation,
        "agent_id": AGENT,
        "session_id": f"{turn.conversation}-s{turn.session}",
        "role": "user",
        "speaker": turn.speaker,
        "content": turn.text,
        "occurred_at": turn.occurred_at.isoformat(),
        "metadata": metadata,
        "idempotency_key": f"{turn.conversation}:{turn.dia_id}",
    }


def wait_drained(client: httpx.Client, timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        state = client.get("/v1/pipeline").json()
        busy = state["episodes"]["queued"] + state["episodes"]["processing"]
        line = f"pipeline: {state['episodes']} queues {state['queues']}"
        if line != last:
            print(line, flush=True)
            last = line
        if busy == 0 and not any(state["queues"].values()):
            return
        time.sleep(2)
    raise TimeoutError("pipeline did not drain")


def query_api(
    stack: BenchStack,
    questions: list[Question],
    user_of: Callable[[Question], str] = lambda q: q.conversation,
) -> dict[str, Any]:
    """Search and context for every question, as the user `user_of` names; recall,
    context tokens, latencies and each block's memories' source metadata."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    search_ms: list[float] = []
    context_ms: list[float] = []
    ranked: dict[int, list[set[str]]] = {}
    context_recall: list[tuple[Question, float]] = []
    precision: list[float] = []  # per non-empty block: share of its memories that are evidence
    tokens: list[int] = []
    timed_out = 0
    injected: list[list[list[dict[str, Any]]]] = []
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=30) as client:
        for index, q in enumerate(questions):
            ident = {"user_id": user_of(q), "agent_id": AGENT}
            started = time.perf_counter()
            found = client.post("/v1/search", json={**ident, "query": q.question, "top_k": 20})
            search_ms.append((time.perf_counter() - started) * 1000)
            found.raise_for_status()
            ranked[index] = [_dia(r) for r in found.json()["results"]]
            started = time.perf_counter()
            ctx = client.post(
                "/v1/context",
                json={**ident, "session_id": "bench", "prompt": q.question, "max_tokens": 1000},
            )
            context_ms.append((time.perf_counter() - started) * 1000)
            ctx.raise_for_status()
            body = ctx.json()
            timed_out += bool(body["timed_out"])
            tokens.append(body["tokens"])
            in_block = [_dia(m) for m in body["memories"]]
            injected.append([[s["metadata"] for s in m["sources"]] for m in body["memories"]])
            context_recall.append((q, recall(q.evidence, in_block, len(in_block))))
            if in_block:
                evidence = set(q.evidence)
                precision.append(sum(bool(d & evidence) for d in in_block) / len(in_block))
    return {
        "ranked": ranked,
        "search_ms": search_ms,
        "context_ms": context_ms,
        "context_recall": context_recall,
        "context_precision": precision,
        "tokens": tokens,
        "timed_out": timed_out,
        "injected": injected,
    }


def _dia(result: dict[str, Any]) -> set[str]:
    return {s["metadata"].get("dia_id") for s in result["sources"]}


def _context_by_category(pairs: list[tuple[Question, float]]) -> dict[str, float]:
    per: dict[str, list[float]] = defaultdict(list)
    for q, value in pairs:
        per[CATEGORIES[q.category]].append(value)
        per["overall"].append(value)
    return {k: round(statistics.fmean(v), 4) for k, v in per.items()}


def report(
    api: dict[str, Any],
    questions: list[Question],
    extra: dict[str, Any],
    title: str = "LoCoMo through the API",
) -> dict[str, Any]:
    by_index = {id(q): i for i, q in enumerate(questions)}
    recall_table = evaluate(questions, lambda q: api["ranked"][by_index[id(q)]])
    ctx = _context_by_category(api["context_recall"])
    overall = recall_table["overall"]
    rows = [
        Row(
            f"{name} R@5 / R@10 / R@20",
            " / ".join(fmt(v, 3) for v in recall_table[name].values()),
            "R@10 ≥ 0.80" if name == "overall" else "R@10 ≥ 0.65",
            recall_table[name]["R@10"] >= (0.80 if name == "overall" else 0.65),
        )
        for name in ["overall", *CATEGORIES.values()]
        if name in recall_table  # a small --questions sample may miss a category
    ]
    rows.append(
        Row(
            "context recall @1,000 tokens (overall)",
            fmt(ctx["overall"], 3),
            "≥ 0.85",
            ctx["overall"] >= 0.85,
        )
    )
    precision = statistics.fmean(api["context_precision"]) if api["context_precision"] else 0.0
    rows.append(Row("context precision (evidence share of injected)", fmt(precision, 3)))
    rows.append(Row("mean context tokens", fmt(statistics.fmean(api["tokens"]), 0)))
    rows.append(Row("context timed out", str(api["timed_out"])))
    rows.append(
        Row(
            "search p50 / p95 (ms, client)",
            f"{fmt(percentile(api['search_ms'], 50))} / {fmt(percentile(api['search_ms'], 95))}",
        )
    )
    rows.append(
        Row(
            "context p50 / p95 (ms, client)",
            f"{fmt(percentile(api['context_ms'], 50))} / {fmt(percentile(api['context_ms'], 95))}",
        )
    )
    print_table(title, rows)
    return {
        "recall": recall_table,
        "context_recall": ctx,
        "context_precision": round(precision, 4),
        "empty_context_blocks": len(questions) - len(api["context_precision"]),
        "overall": overall,
        **extra,
        "search_ms": {
            "p50": percentile(api["search_ms"], 50),
            "p95": percentile(api["search_ms"], 95),
        },
        "context_ms": {
            "p50": percentile(api["context_ms"], 50),
            "p95": percentile(api["context_ms"], 95),
        },
        "mean_context_tokens": statistics.fmean(api["tokens"]),
        "context_timed_out": api["timed_out"],
    }


def compare(title: str, tables: dict[str, dict[str, dict[str, float]]]) -> None:
    rows = []
    for name, table in tables.items():
        cats = " ".join(
            f"{table[c]['R@10']:.3f}" if c in table else "-" for c in CATEGORIES.values()
        )
        rows.append(Row(name, " / ".join(f"{v:.3f}" for v in table["overall"].values()), cats))
    print_table(f"{title} (overall R@5/R@10/R@20; R@10 multi-hop temporal open single)", rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
    )
    parser.add_argument(
        "--home", type=Path, help="reuse this MUMA_HOME (ingest skipped if already done)"
    )
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument(
        "--questions", type=int, default=0, help="only the first N questions (0: all)"
    )
    parser.add_argument("--json", type=Path)
    add_setting_variant(parser)
    parser.add_argument(
        "--ingest-inprocess",
        action="store_true",
        help="development: run the pipeline stages in this process (no HTTP/Celery)",
    )
    args = parser.parse_args()
    turns, questions = load(args.data)
    if args.questions:
        questions = questions[: args.questions]
    # In-process ingest needs no workers; beat's stuck-episode sweep would race with it.
    inprocess = args.ingest_inprocess
    env = setting_variant(parser, args)
    with BenchStack(
        env=env,
        tenant_id=TENANT,
        home=args.home,
        keep=args.home is not None,
        workers=0 if inprocess else 1,
        beat=not inprocess,
    ) as stack:
        marker = stack.home / INGESTED_MARKER
        ingest_s = None
        if not marker.exists():
            if args.ingest_inprocess:
                from benchmarks.locomo_ingest import ingest_inprocess

                ingest_s = ingest_inprocess(turns, tenant_id=TENANT, agent_id=AGENT)
            else:
                ingest_s = ingest(stack, turns)
            marker.write_text(str(ingest_s))
            print(f"ingested {len(turns)} turns in {ingest_s:.0f}s")
        api = query_api(stack, questions)
        results = report(
            api,
            questions,
            {
                "turns": len(turns),
                "questions": len(questions),
                "ingest_seconds": ingest_s,
                "settings": env or "defaults",
            },
        )
        from memory.clients.embedder import get_embedder

        baselines = {
            "BM25 over turns": evaluate(questions, bm25_baseline(turns)),
            "dense over turns": evaluate(questions, dense_baseline(turns, get_embedder().embed)),
            "MUMA (API)": results["recall"],
        }
        compare("Baselines", baselines)
        results["baselines"] = baselines
        if not args.no_ablation:
            ablation = {
                name: evaluate(questions, inprocess_retriever(TENANT, AGENT, overrides))
                for name, overrides in ablation_variants().items()
            }
            compare("Ablation (in process)", ablation)
            results["ablation"] = ablation
    print(f"results: {write_results('locomo', results, args.json)}")


if __name__ == "__main__":
    main()
