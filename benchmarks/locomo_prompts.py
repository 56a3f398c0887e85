"""LoCoMo users asked what agents' prompts often are: a question after pasted text, or
small talk with nothing to look up.

- Long prompts: each question of a sample is sent to /v1/context after `--pasted-chars`
  characters of another conversation's turns (so its names and topics are not the
  user's), and also alone: recall inside the block (as `benchmarks.locomo`), mean tokens,
  client p50/p95 and contexts cut short, for both.
- Small talk: each of SMALL_TALK ("thanks!", "continue", "run the tests"...) is sent to
  /v1/context for every user: how many blocks held memories, and their mean tokens.

Runs against a home `benchmarks.locomo --home DIR` ingested; `--api-env` sets the API's
settings, so a setting can be compared on one home:

    .venv/bin/python -m benchmarks.locomo_prompts --home /tmp/locomo
    .venv/bin/python -m benchmarks.locomo_prompts --home /tmp/locomo \\
        --api-env MUMA_RETRIEVAL__QUERY_FOCUS_CHARS=16000 --json /tmp/whole-prompts.json
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
from benchmarks.locomo import AGENT, TENANT
from benchmarks.locomo_data import (
    CATEGORIES,
    Question,
    Turn,
    add_api_env,
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


def post_context(client: httpx.Client, user_id: str, prompt: str) -> tuple[dict[str, Any], float]:
    """/v1/context's answer for one prompt (1,000 tokens), and the client's ms."""
    body = {"user_id": user_id, "agent_id": AGENT, "session_id": "bench-prompts",
            "prompt": prompt, "max_tokens": 1000}  # fmt: skip
    started = time.perf_counter()
    response = client.post("/v1/context", json=body)
    took = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return response.json(), took


def ask(client: httpx.Client, questions: list[Question], prompts: list[str]) -> dict[str, Any]:
    """One /v1/context per prompt: recall inside the block by category, tokens, client ms."""
    per: dict[str, list[float]] = defaultdict(list)
    took: list[float] = []
    tokens: list[int] = []
    timed_out = 0
    for q, prompt in zip(questions, prompts, strict=True):
        answer, ms = post_context(client, q.conversation, prompt)
        took.append(ms)
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


# Fillers (the write path's `is_filler`: no information), go-ons said to an agent (the
# gate's own PROMPT_FILLER_WORDS), then prompts with content words about the task at hand
# rather than the user's memories.
SMALL_TALK = (
    "thanks!", "ok", "lol", "hmm", "sounds good", "yes, do it", "Good morning!", "no",
    "sure", "haha nice", "how are you?", "go on", "What?", "can you do that again?",
    "continue", "Thank you so much!", "great, go ahead", "try again", "perfect", "next",
    "please fix the bug", "run the tests", "summarize this", "Show me the diff",
    "write a poem about the sea", "explain quantum computing", "What time is it?",
)  # fmt: skip


def ask_small_talk(client: httpx.Client, users: list[str]) -> dict[str, Any]:
    """Each SMALL_TALK prompt for each user: blocks with memories, mean tokens, per prompt."""
    per_prompt: dict[str, int] = {}
    tokens: list[int] = []
    for prompt in SMALL_TALK:
        per_prompt[prompt] = 0
        for user in users:
            answer, _ = post_context(client, user, prompt)
            per_prompt[prompt] += bool(answer["memories"])
            tokens.append(answer["tokens"])
    return {
        "requests": len(tokens),
        "blocks_with_memories": sum(per_prompt.values()),
        "mean_tokens": statistics.fmean(tokens),
        "per_prompt": per_prompt,
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
    # The service's defaults; with no worker the accesses it records wait in the queue,
    # so the kept home is the same for the next run.
    env = dict(api_env)
    with BenchStack(env=env, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False) as st:
        headers = {"Authorization": f"Bearer {st.token}"}
        with httpx.Client(base_url=st.api_url, headers=headers, timeout=60) as client:
            ask(client, questions[:20], [q.question + " (warm-up)" for q in questions[:20]])
            alone = ask(client, questions, [q.question for q in questions])
            pasted = ask(client, questions, long_prompts)
            talk = ask_small_talk(client, sorted(by_conv))
    return {
        "questions": len(questions),
        "pasted_chars": chars,
        "seed": seed,
        "api_env": env,
        "alone": alone,
        "after_pasted_text": pasted,
        "small_talk": talk,
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
    talk = result["small_talk"]
    users = talk["requests"] // len(talk["per_prompt"])
    rows = [
        Row("blocks with memories", f"{talk['blocks_with_memories']} of {talk['requests']}"),
        Row("mean tokens", fmt(talk["mean_tokens"], 0)),
        *(Row(prompt, f"{n} of {users}") for prompt, n in talk["per_prompt"].items()),
    ]
    print_table("/v1/context, small talk: blocks with memories", rows)


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--questions", type=int, default=400, help="a sample (0: all)")
    parser.add_argument("--pasted-chars", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    add_api_env(parser)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    result = run(args.home, args.data, args.questions, args.pasted_chars, args.seed, args.api_env)
    print_report(result)
    print(f"results: {write_results('locomo-prompts', result, args.json)}")


if __name__ == "__main__":
    main()
