"""Memories in the user's language: the public multilingual sample through the real API.

The data (`benchmarks/data/multilingual-sample/`, built by `benchmarks.multilingual_data`
from XQuAD and the Japanese and French SQuAD test sets of Asai et al.; sources and
licences in its README) gives seven users, one per language (en, zh, ja, de, es, fr, ru;
the user id names the language), each told the same five encyclopedia paragraphs, a
sentence per user turn (21-24 memories), and asked the same 33 questions in their own
language. Each question's evidence is the sentence holding its answer; the other
sentences of the five paragraphs are its distractors.

Two passes, both through POST /v1/search (top 20) and POST /v1/context (1,000 tokens):
- native: each user's questions in its own language;
- cross: the English questions asked of each other language's user.

Reported per language and pass: R@1 / R@5 / R@10, context recall and precision, search
p50 / p95; and ingest notes/s over the whole capture (first POST to drained pipeline).
With 21-24 memories a user, a random order already scores R@1 / R@5 / R@10 of about
0.05 / 0.23 / 0.45: read R@1 and the context figures first.
The headline runs the service's defaults; `--env KEY=VALUE` gives a labelled variant, e.g.
`--env MUMA_EMBEDDING__PROVIDER=e5 --env MUMA_EMBEDDING__MODEL=multilingual-e5-small`.

    .venv/bin/python -m benchmarks.multilingual
    .venv/bin/python -m benchmarks.multilingual --quick   # 12 questions a language
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    add_setting_variant,
    fmt,
    percentile,
    post_captures,
    setting_variant,
    write_results,
)
from benchmarks.locomo import wait_drained
from benchmarks.multilingual_data import DATA, LANGUAGES, load, score
from benchmarks.stack import BenchStack

TENANT, AGENT, SPEAKER = "bench", "assistant-agent", "Sam"
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
BATCH = 100
TOP_K, CONTEXT_TOKENS, QUICK = 20, 1000, 12
MARKER = "multilingual-ingested"  # written in a kept home once ingested (the ingest figures)


def episodes(sample: dict[str, Any], languages: list[str]) -> list[dict[str, Any]]:
    """Every memory of every chosen language as a user turn: one session per paragraph,
    a day apart, a minute between sentences; `metadata.memory` is the memory id every
    search result is scored by."""
    out = []
    for lang in languages:
        user = sample["users"][lang]
        paragraphs = list(dict.fromkeys(m["paragraph"] for m in user["memories"]))
        for index, memory in enumerate(user["memories"]):
            day = paragraphs.index(memory["paragraph"])
            out.append(
                {
                    "user_id": user["user_id"],
                    "agent_id": AGENT,
                    "session_id": f"{user['user_id']}-{memory['paragraph']}",
                    "role": "user",
                    "speaker": SPEAKER,
                    "content": memory["text"],
                    "occurred_at": (START + timedelta(days=day, minutes=index)).isoformat(),
                    "metadata": {"memory": memory["id"], "language": lang},
                    "idempotency_key": f"multilingual:{memory['id']}",
                }
            )
    return out


def ingest(stack: BenchStack, sample: dict[str, Any], languages: list[str]) -> dict[str, Any]:
    """Capture every memory, wait until the pipeline drained; the notes then active for
    the users (GET /v1/memories) per second of the whole capture."""
    items = episodes(sample, languages)
    headers = {"Authorization": f"Bearer {stack.token}"}
    started = time.perf_counter()
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for start in range(0, len(items), BATCH):
            post_captures(client, {"episodes": items[start : start + BATCH]})
        wait_drained(client)
        seconds = time.perf_counter() - started
        notes = {}
        for lang in languages:
            params = {"user_id": sample["users"][lang]["user_id"], "agent_id": AGENT, "limit": 1}
            found = client.get("/v1/memories", params=params)
            found.raise_for_status()
            notes[lang] = found.json()["total"]
    total = sum(notes.values())
    return {
        "episodes": len(items),
        "seconds": round(seconds, 2),
        "notes": notes,
        "notes_per_second": round(total / seconds, 3),
        "episodes_per_second": round(len(items) / seconds, 3),
    }


def _memories(result: dict[str, Any]) -> set[str]:
    return {s["metadata"].get("memory") for s in result["sources"]} - {None}


def ask(client: httpx.Client, user_id: str, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question to /v1/search and /v1/context as `user_id`: the memory ids behind
    each ranked result and each injected memory, the latencies, and the scores."""
    ident = {"user_id": user_id, "agent_id": AGENT}
    ranked, blocks, search_ms, context_ms, tokens = [], [], [], [], []
    for q in questions:
        started = time.perf_counter()
        found = client.post("/v1/search", json={**ident, "query": q["question"], "top_k": TOP_K})
        search_ms.append((time.perf_counter() - started) * 1000)
        found.raise_for_status()
        ranked.append([_memories(r) for r in found.json()["results"]])
        body = {**ident, "session_id": f"{user_id}-bench", "prompt": q["question"]}
        started = time.perf_counter()
        ctx = client.post("/v1/context", json={**body, "max_tokens": CONTEXT_TOKENS})
        context_ms.append((time.perf_counter() - started) * 1000)
        ctx.raise_for_status()
        blocks.append([_memories(m) for m in ctx.json()["memories"]])
        tokens.append(ctx.json()["tokens"])
    scores = score([q["evidence"] for q in questions], ranked, blocks)
    return {
        **scores,
        "questions": len(questions),
        "search_ms": {"p50": percentile(search_ms, 50), "p95": percentile(search_ms, 95)},
        "context_ms": {"p50": percentile(context_ms, 50), "p95": percentile(context_ms, 95)},
        "mean_context_tokens": round(statistics.fmean(tokens), 1),
        "search_ms_each": [round(ms, 1) for ms in search_ms],
        "ranked": [[sorted(s) for s in r[:10]] for r in ranked],
    }


def run_passes(
    stack: BenchStack, sample: dict[str, Any], languages: list[str], limit: int
) -> dict[str, dict[str, Any]]:
    """`<lang>`: the native pass of each language; `en→<lang>`: the cross pass of each
    language but English. `limit` keeps the first N questions of each (0: all)."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    passes: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for lang in languages:
            user = sample["users"][lang]
            passes[lang] = ask(client, user["user_id"], user["questions"][: limit or None])
        for lang in [lang for lang in languages if lang != "en"]:
            user = sample["users"][lang]
            passes[f"en→{lang}"] = ask(
                client, user["user_id"], user["cross_questions"][: limit or None]
            )
    return passes


def _pooled(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """Question-weighted means of the scores of several passes, and their searches' p95."""
    n = sum(p["questions"] for p in passes)
    keys = ("R@1", "R@5", "R@10", "context_recall", "context_precision")
    out: dict[str, Any] = {
        k: round(sum(p[k] * p["questions"] for p in passes) / n, 4) for k in keys
    }
    each = [ms for p in passes for ms in p["search_ms_each"]]
    out["questions"] = n
    out["search_ms"] = {"p50": percentile(each, 50), "p95": percentile(each, 95)}
    return out


def report(passes: dict[str, dict[str, Any]], ingested: dict[str, Any] | None, title: str) -> dict:
    """Print one row per pass (and the pooled native and cross rows); return the summary."""
    native = [p for name, p in passes.items() if "→" not in name]
    cross = [p for name, p in passes.items() if "→" in name]
    pooled = {"all native": _pooled(native)} | ({"all en→other": _pooled(cross)} if cross else {})
    header = ["pass", "q", "R@1", "R@5", "R@10", "ctx recall", "ctx precision", "search p95 ms"]
    rows = [
        [
            name,
            str(p["questions"]),
            *(fmt(p[k], 3) for k in ("R@1", "R@5", "R@10")),
            fmt(p["context_recall"], 3),
            fmt(p["context_precision"], 3),
            fmt(p["search_ms"]["p95"]),
        ]
        for name, p in [*passes.items(), *pooled.items()]
    ]
    footer = "ingest: skipped (kept home)"
    if ingested:
        footer = (
            f"ingest: {ingested['episodes']} turns → {sum(ingested['notes'].values())} notes "
            f"in {ingested['seconds']:.0f}s = {ingested['notes_per_second']:.2f} notes/s"
        )
    _print_grid(title, header, rows, footer)
    return {"pooled": pooled, "ingest": ingested}


def _print_grid(title: str, header: list[str], rows: list[list[str]], footer: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        for row in [header, *rows]:
            print("  " + " ".join(f"{cell:>13}" for cell in row))
        print(footer)
        return
    table = Table(title=title, caption=footer)
    for index, name in enumerate(header):
        table.add_column(name, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--home", type=Path, help="reuse this MUMA_HOME (ingest skipped if done)")
    parser.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated")
    parser.add_argument("--questions", type=int, default=0, help="first N a language (0: all)")
    parser.add_argument("--quick", action="store_true", help=f"--questions {QUICK}")
    parser.add_argument("--json", type=Path)
    add_setting_variant(parser)
    args = parser.parse_args()
    languages = [lang for lang in args.languages.split(",") if lang]
    if unknown := set(languages) - set(LANGUAGES):
        parser.error(f"unknown languages {sorted(unknown)}; known: {', '.join(LANGUAGES)}")
    env = setting_variant(parser, args)
    limit = QUICK if args.quick else args.questions
    sample = load(args.data)
    with BenchStack(env=env, tenant_id=TENANT, home=args.home, keep=args.home is not None) as stack:
        marker = stack.home / MARKER
        ingested = None
        if not marker.exists():
            ingested = ingest(stack, sample, languages)
            marker.write_text(json.dumps(ingested))
        passes = run_passes(stack, sample, languages, limit)
    label = "defaults" if not env else "variant " + " ".join(f"{k}={v}" for k, v in env.items())
    title = (
        f"Multilingual sample, {label} (R@k by evidence sentence, context {CONTEXT_TOKENS} tokens)"
    )
    results = report(passes, ingested, title)
    results.update(passes=passes, languages=languages, settings=env or "defaults")
    results["data"] = str(args.data)
    print(f"results: {write_results('multilingual', results, args.json)}")


if __name__ == "__main__":
    main()
