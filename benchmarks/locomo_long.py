"""LoCoMo questions asked after pasted text: /v1/context's recall and time on long prompts.

An agent's prompt is often more than a question: a log, a document or an earlier chat
pasted before it. Each question here is sent to /v1/context after `--pasted-chars`
characters of another conversation's turns (so its names and topics are not the user's),
and also alone; the table gives recall inside the block (as `benchmarks.locomo`), mean
tokens and client p50/p95 for both. Runs against a home `benchmarks.locomo --home DIR`
ingested; `--api-env` sets the API's settings, so a setting can be compared:

    .venv/bin/python -m benchmarks.locomo_long --home /tmp/locomo
    .venv/bin/python -m benchmarks.locomo_long --home /tmp/locomo \\
        --api-env MUMA_RETRIEVAL__QUERY_EMBED_CHARS=16000 --json /tmp/long-uncapped.json
"""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import Row, fmt, percentile, print_table, write_results
from benchmarks.locomo import AGENT, BENCH_ENV, TENANT
from benchmarks.locomo_data import (
    CATEGORIES,
    Question,
    Turn,
    kept_home_parser,
    load,
    parse_kept_home,
    recall,
)
from benchmarks.locomo_eval import turn_text
from benchmarks.stack import BenchStack


def pasted_text(
    turns_by_conv: dict[str, list[Turn]], conversation: str, chars: int, rng: random.Random
) -> str:
    """About `chars` characters of consecutive turns of a conversation other than this one."""
    other = rng.choice(sorted(c for c in turns_by_conv if c != conversation))
    turns = turns_by_conv[other]
    start = rng.randrange(len(turns))
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(turn_text(turns[(start + len(lines)) % len(turns)]))
    return "\n".join(lines)[:chars]


def ask(client: httpx.Client, questions: list[Question], prompts: list[str]) -> dict[str, Any]:
    """One /v1/context per prompt: recall inside the block by category, tokens, client ms."""
    per: dict[str, list[float]] = defaultdict(list)
    took: list[float] = []
    tokens: list[int] = []
    timed_out = 0
    for q, prompt in zip(questions, prompts, strict=True):
        body = {
            "user_id": q.conversation,
            "agent_id": AGENT,
            "session_id": "bench-long",
            "prompt": prompt,
            "max_tokens": 1000,
        }
        started = time.perf_counter()
        response = client.post("/v1/context", json=body)
        took.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        answer = response.json()
        timed_out += bool(answer["timed_out"])
        tokens.append(answer["tokens"])
        block = [{s["metadata"].get("dia_id") for s in m["sources"]} for m in answer["memories"]]
        value = recall(q.evidence, block, len(block))
        per[CATEGORIES[q.category]].append(value)
        per["overall"].append(value)
    return {
        "context_recall": {k: round(statistics.fmean(v), 4) for k, v in per.items()},
        "mean_tokens": statistics.fmean(tokens),
        "timed_out": timed_out,
        "client_ms": {"p50": percentile(took, 50), "p95": percentile(took, 95)},
    }


def run(
    home: Path, data: Path, sample: int, chars: int, seed: int, api_env: dict[str, str]
) -> dict[str, Any]:
    turns, questions = load(data)
    rng = random.Random(seed)
    if sample:
        questions = rng.sample(questions, min(sample, len(questions)))
    by_conv: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_conv[turn.conversation].append(turn)
    long_prompts = [
        f"{pasted_text(by_conv, q.conversation, chars, rng)}\n\n{q.question}" for q in questions
    ]
    env = {**BENCH_ENV, **api_env}
    with BenchStack(env=env, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False) as st:
        headers = {"Authorization": f"Bearer {st.token}"}
        with httpx.Client(base_url=st.api_url, headers=headers, timeout=60) as client:
            ask(client, questions[:20], [q.question + " (warm-up)" for q in questions[:20]])
            alone = ask(client, questions, [q.question for q in questions])
            pasted = ask(client, questions, long_prompts)
    return {
        "questions": len(questions),
        "pasted_chars": chars,
        "seed": seed,
        "api_env": env,
        "alone": alone,
        "after_pasted_text": pasted,
    }


def print_report(result: dict[str, Any]) -> None:
    rows = []
    for name in ("alone", "after_pasted_text"):
        r = result[name]
        cats = " / ".join(
            fmt(r["context_recall"].get(c, float("nan")), 3)
            for c in ["overall", *CATEGORIES.values()]
        )
        ms = r["client_ms"]
        rows.append(
            Row(
                name.replace("_", " "),
                cats,
                f"{fmt(ms['p50'])} / {fmt(ms['p95'])} ms; {fmt(r['mean_tokens'], 0)} "
                f"tokens; {r['timed_out']} timed out",
            )
        )
    title = (
        f"/v1/context, {result['questions']} questions, after "
        f"{result['pasted_chars']:,} pasted characters or alone "
        "(recall overall / multi-hop / temporal / open-domain / single-hop)"
    )
    print_table(title, rows)


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--questions", type=int, default=400, help="a sample (0: all)")
    parser.add_argument("--pasted-chars", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--api-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the API (repeatable), e.g. MUMA_RETRIEVAL__X=1",
    )
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    if bad := [item for item in args.api_env if "=" not in item]:
        parser.error(f"--api-env takes KEY=VALUE, not {bad[0]!r}")
    api_env = dict(item.split("=", 1) for item in args.api_env)
    result = run(args.home, args.data, args.questions, args.pasted_chars, args.seed, api_env)
    print_report(result)
    print(f"results: {write_results('locomo-long', result, args.json)}")


if __name__ == "__main__":
    main()
