"""A public user-assistant development set: a sample of LongMemEval through the real API.

The data (`benchmarks/data/longmemeval-sample/`, MIT; where it comes from is in its
README) is 41 LongMemEval questions with the sessions that answer them: 85 sessions, 999
turns between a user and an assistant, the assistant's replies long (up to 4,129
characters: lists, plans, code). All sessions are stored as one user's history (user turns
as role `user` said by SPEAKER, assistant turns as role `assistant`), so each question's
sessions sit among 80-odd sessions that do not answer it. Evidence is labelled per
session: a question's recall at k is the share of its sessions that the top k memories
come from.

Reported with the service's defaults: R@5/10/20 by question type and overall, context
recall and precision at 1,000 tokens, search p95, and a BM25 baseline over the raw turns.

    .venv/bin/python -m benchmarks.longmemeval
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
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
from benchmarks.locomo import wait_drained
from benchmarks.locomo_agent_chatter import OFF_TOPIC_PROMPTS
from benchmarks.locomo_data import recall
from benchmarks.stack import BenchStack
from memory.retrieval.fusion import bm25_scores
from memory.retrieval.text import analyse

DATA = Path(__file__).parent / "data" / "longmemeval-sample" / "longmemeval-sample.json"
TENANT, USER, AGENT, SPEAKER = "bench", "lme-user", "assistant-agent", "Sam"
KS = (5, 10, 20)
BATCH = 100


def parse_date(value: str) -> datetime:
    """LongMemEval's "2023/04/10 (Mon) 17:50" as a UTC time."""
    day, _, clock = value.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def load(path: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    return data["sessions"], data["questions"]


def episodes(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every turn as a capture episode, a minute apart from the session's start."""
    out = []
    for session in sessions:
        start = parse_date(session["date"])
        for index, turn in enumerate(session["turns"]):
            user = turn["role"] == "user"
            out.append(
                {
                    "user_id": USER,
                    "agent_id": AGENT,
                    "session_id": session["id"],
                    "role": "user" if user else "assistant",
                    "speaker": SPEAKER if user else None,
                    "content": turn["content"],
                    "occurred_at": (start + timedelta(minutes=index)).isoformat(),
                    "metadata": {"session": session["id"], "turn": index},
                    "idempotency_key": f"lme:{session['id']}:{index}",
                }
            )
    return out


def ingest(stack: BenchStack, sessions: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {stack.token}"}
    items = episodes(sessions)
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for start in range(0, len(items), BATCH):
            post_captures(client, {"episodes": items[start : start + BATCH]})
        wait_drained(client)
    return time.perf_counter() - started


def _sessions_of(result: dict[str, Any]) -> set[str]:
    return {s["metadata"].get("session") for s in result["sources"]} - {None}


def off_topic(stack: BenchStack) -> dict[str, Any]:
    """OFF_TOPIC_PROMPTS through /v1/context: how many get no memory, and each best cosine
    (from /v1/search's explanations) for the record."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    ident = {"user_id": USER, "agent_id": AGENT}
    empty, best = 0, []
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for prompt in OFF_TOPIC_PROMPTS:
            body = {**ident, "session_id": "lme-off-topic", "prompt": prompt}
            ctx = client.post("/v1/context", json=body)
            ctx.raise_for_status()
            empty += not ctx.json()["memories"]
            found = client.post("/v1/search", json={**ident, "query": prompt, "top_k": 20})
            sims = [r["explanation"]["similarity"] or 0.0 for r in found.json()["results"]]
            best.append(round(max(sims, default=0.0), 3))
    return {"asked": len(OFF_TOPIC_PROMPTS), "empty": empty, "best_cosines": best}


def query(stack: BenchStack, questions: list[dict[str, Any]]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {stack.token}"}
    ranked, blocks, search_ms, best = [], [], [], []
    ident = {"user_id": USER, "agent_id": AGENT}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for q in questions:
            started = time.perf_counter()
            found = client.post("/v1/search", json={**ident, "query": q["question"], "top_k": 20})
            search_ms.append((time.perf_counter() - started) * 1000)
            found.raise_for_status()
            ranked.append([_sessions_of(r) for r in found.json()["results"]])
            sims = [r["explanation"]["similarity"] or 0.0 for r in found.json()["results"]]
            best.append(round(max(sims, default=0.0), 3))
            body = {**ident, "session_id": "lme-bench", "prompt": q["question"]}
            ctx = client.post("/v1/context", json={**body, "max_tokens": 1000})
            ctx.raise_for_status()
            blocks.append([_sessions_of(m) for m in ctx.json()["memories"]])
    return {"ranked": ranked, "blocks": blocks, "search_ms": search_ms, "best_cosines": best}


def bm25_ranked(sessions: list[dict[str, Any]], questions: list[dict[str, Any]]) -> list[list]:
    """BM25 over the raw turns (the read path's analyser), each hit as its session."""
    docs = {
        f"{s['id']}#{i}": analyse(t["content"]) for s in sessions for i, t in enumerate(s["turns"])
    }
    df: dict[str, int] = defaultdict(int)
    for terms in docs.values():
        for term in set(terms):
            df[term] += 1
    avg = statistics.fmean(len(t) for t in docs.values())
    out = []
    for q in questions:
        scores = bm25_scores(
            analyse(q["question"]), docs, doc_freq=df, n_docs=len(docs), avg_len=avg
        )
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:20]
        out.append([{doc_id.split("#")[0]} for doc_id, _ in best])
    return out


def recall_table(questions: list[dict[str, Any]], ranked: list[list]) -> dict[str, dict]:
    per: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q, hits in zip(questions, ranked, strict=True):
        for k in KS:
            value = recall(tuple(q["evidence_sessions"]), hits, k)
            per[q["type"]][k].append(value)
            per["overall"][k].append(value)
    return {
        name: {f"R@{k}": round(statistics.fmean(v[k]), 4) for k in KS}
        for name, v in sorted(per.items())
    }


def report(questions: list[dict[str, Any]], api: dict[str, Any], bm25: list[list]) -> dict:
    mine, base = recall_table(questions, api["ranked"]), recall_table(questions, bm25)
    ctx = [
        recall(tuple(q["evidence_sessions"]), block, len(block))
        for q, block in zip(questions, api["blocks"], strict=True)
    ]
    precision = [
        sum(bool(s & set(q["evidence_sessions"])) for s in block) / len(block)
        for q, block in zip(questions, api["blocks"], strict=True)
        if block
    ]
    rows = [
        Row(
            f"{name} ({sum(q['type'] == name for q in questions) or len(questions)})",
            " / ".join(fmt(v, 3) for v in mine[name].values()),
            "BM25 " + " / ".join(fmt(v, 3) for v in base[name].values()),
        )
        for name in mine
    ]
    rows.append(Row("context recall @1,000 tokens", fmt(statistics.fmean(ctx), 3)))
    rows.append(Row("context precision", fmt(statistics.fmean(precision or [0.0]), 3)))
    search = api["search_ms"]
    rows.append(Row("search p50 / p95 (ms)", f"{fmt(percentile(search, 50))} / "
                    f"{fmt(percentile(search, 95))}"))  # fmt: skip
    print_table("LongMemEval sample (R@5 / R@10 / R@20, session evidence)", rows)
    return {
        "recall": mine,
        "bm25": base,
        "context_recall": round(statistics.fmean(ctx), 4),
        "context_precision": round(statistics.fmean(precision or [0.0]), 4),
        "empty_context_blocks": sum(not b for b in api["blocks"]),
        "search_ms": {"p50": percentile(search, 50), "p95": percentile(search, 95)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, help="reuse this MUMA_HOME (ingest skipped if done)")
    parser.add_argument("--json", type=Path)
    add_setting_variant(parser)
    args = parser.parse_args()
    sessions, questions = load()
    env = setting_variant(parser, args)
    with BenchStack(env=env, tenant_id=TENANT, home=args.home, keep=args.home is not None) as stack:
        marker = stack.home / "longmemeval-ingested"
        ingest_s = None
        if not marker.exists():
            ingest_s = ingest(stack, sessions)
            marker.write_text(str(ingest_s))
            print(f"ingested {sum(len(s['turns']) for s in sessions)} turns in {ingest_s:.0f}s")
        api = query(stack, questions)
        results = report(questions, api, bm25_ranked(sessions, questions))
        results["best_cosines"] = api["best_cosines"]
        results["off_topic"] = off_topic(stack)
        print(f"off-topic prompts answered with no memory: {results['off_topic']['empty']} of "
              f"{results['off_topic']['asked']}")  # fmt: skip
    results.update(questions=len(questions), ingest_seconds=ingest_s, settings=env or "defaults")
    print(f"results: {write_results('longmemeval', results, args.json)}")


if __name__ == "__main__":
    main()
