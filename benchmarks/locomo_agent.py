"""LoCoMo as an agent session: one speaker is the user, the other the assistant, with the
chatter of a real agent session between their turns. Measures what the chatter costs.

Each conversation is ingested twice through POST /v1/episodes, as two users of one
service with its default settings:
- `clean-<conversation>`: the conversation's turns only, the first speaker as role `user`,
  the second as role `assistant` (each keeps its name as speaker);
- `agent-<conversation>`: the same turns with chatter between them (below), then a later
  pass in which, for a user turn of each session, /v1/context is asked and the assistant
  echoes what was injected (pasting the block's lines, or "You told me that ...").

Chatter (fixed seed, `benchmarks.locomo_agent_chatter`): slash commands, the user's and
the assistant's acknowledgements, memory commands by id, tool results (clock, weather,
file listings, search results, build logs). Every chatter episode carries `chatter: kind`
in its metadata, so an injected memory made only of chatter is counted as such.

Reported for both users: R@5/10/20 and context recall/precision over LoCoMo's category
1-4 questions, search p95; for the agent session also the share of injected memories that
are chatter, and the captures the capture rules skipped.

    .venv/bin/python -m benchmarks.locomo_agent --data ../shared/eval/locomo10.json
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    Row,
    add_setting_variant,
    fmt,
    post_captures,
    print_table,
    setting_variant,
    write_results,
)
from benchmarks.locomo import AGENT, TENANT, compare, query_api, report, wait_drained
from benchmarks.locomo_agent_chatter import OFF_TOPIC_PROMPTS, Chatter, chatter_between, echo_of
from benchmarks.locomo_data import DEFAULT_DATA, INGESTED_MARKER, Question, Turn, load
from benchmarks.stack import BenchStack

SEED = 45
BATCH = 100


def clean_user(conversation: str) -> str:
    return f"clean-{conversation}"


def agent_user(conversation: str) -> str:
    return f"agent-{conversation}"


def session_id(user_id: str, session: int) -> str:
    return f"{user_id}-s{session}"


def by_session(turns: list[Turn]) -> dict[tuple[str, int], list[Turn]]:
    grouped: dict[tuple[str, int], list[Turn]] = defaultdict(list)
    for turn in turns:
        grouped[(turn.conversation, turn.session)].append(turn)
    return dict(sorted(grouped.items()))


def first_speakers(turns: list[Turn]) -> dict[str, str]:
    """Each conversation's first speaker: the one who plays the user."""
    first: dict[str, str] = {}
    for turn in turns:
        first.setdefault(turn.conversation, turn.speaker)
    return first


def turn_episode(turn: Turn, user_id: str, role: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"dia_id": turn.dia_id}
    if turn.caption:
        metadata["blip_caption"] = turn.caption
    return {
        "user_id": user_id,
        "agent_id": AGENT,
        "session_id": session_id(user_id, turn.session),
        "role": role,
        "speaker": turn.speaker,
        "content": turn.text,
        "occurred_at": turn.occurred_at.isoformat(),
        "metadata": metadata,
        "idempotency_key": f"{user_id}:{turn.dia_id}",
    }


def chatter_episode(item: Chatter, user_id: str, session: int, at: Any, key: str) -> dict:
    return {
        "user_id": user_id,
        "agent_id": AGENT,
        "session_id": session_id(user_id, session),
        "role": item.role,
        "content": item.text,
        "occurred_at": at.isoformat(),
        "metadata": {"chatter": item.kind},
        "idempotency_key": f"{user_id}:{key}",
    }


def session_episodes(
    turns: list[Turn], user_id: str, user_speaker: str, rng: random.Random | None
) -> list[dict[str, Any]]:
    """One session's episodes for `user_id`, with chatter when `rng` is given."""
    episodes: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        role = "user" if turn.speaker == user_speaker else "assistant"
        if rng is not None:
            for n, item in enumerate(chatter_between(rng, index, role)):
                at = turn.occurred_at - timedelta(seconds=30 - n)
                key = f"{turn.dia_id}:chatter{n}"
                episodes.append(chatter_episode(item, user_id, turn.session, at, key))
        episodes.append(turn_episode(turn, user_id, role))
    return episodes


def ingest_users(stack: BenchStack, turns: list[Turn]) -> float:
    """Both users' sessions through POST /v1/episodes; seconds until drained."""
    started = time.perf_counter()
    rng = random.Random(SEED)
    speakers = first_speakers(turns)
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for (conversation, _), items in by_session(turns).items():
            users = ((clean_user(conversation), None), (agent_user(conversation), rng))
            for user_id, chatter_rng in users:
                episodes = session_episodes(items, user_id, speakers[conversation], chatter_rng)
                for start in range(0, len(episodes), BATCH):
                    post_captures(client, {"episodes": episodes[start : start + BATCH]})
        wait_drained(client)
    return time.perf_counter() - started


def echo_sessions(stack: BenchStack, turns: list[Turn]) -> int:
    """For one user turn of every session, ask /v1/context in that session and capture
    the assistant echoing the block, then the user's thanks. Returns echoes captured."""
    rng = random.Random(SEED + 1)
    speakers = first_speakers(turns)
    headers = {"Authorization": f"Bearer {stack.token}"}
    echoes = 0
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for (conversation, session), items in by_session(turns).items():
            mine = [t for t in items if t.speaker == speakers[conversation] and len(t.text) > 40]
            if not mine:
                continue
            turn = rng.choice(mine)
            user_id = agent_user(conversation)
            sid = session_id(user_id, session)
            ident = {"user_id": user_id, "agent_id": AGENT, "session_id": sid}
            answer = client.post("/v1/context", json={**ident, "prompt": turn.text})
            answer.raise_for_status()
            body = answer.json()
            if not body["memories"]:
                continue
            at = turn.occurred_at + timedelta(minutes=5)
            said = echo_of(rng, body["context"], [m["content"] for m in body["memories"]])
            episodes = [
                chatter_episode(item, user_id, session, at + timedelta(seconds=n), f"{sid}:echo{n}")
                for n, item in enumerate(said)
            ]
            post_captures(client, {"episodes": episodes})
            echoes += 1
        wait_drained(client)
    return echoes


def chatter_share(injected: list[list[list[dict[str, Any]]]]) -> tuple[float, Counter[str]]:
    """The share of injected memories all of whose sources are chatter, and their kinds."""
    total = 0
    kinds: Counter[str] = Counter()
    for block in injected:
        for sources in block:
            total += 1
            found = [s.get("chatter") for s in sources]
            if found and all(found):
                kinds[str(found[0])] += 1
    return (sum(kinds.values()) / total if total else 0.0), kinds


def off_topic_blocks(stack: BenchStack, users: list[str]) -> tuple[int, int, int]:
    """(prompts answered with an empty block, prompts asked, memories injected in all)
    for OFF_TOPIC_PROMPTS asked of each of `users` through /v1/context."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    empty = injected = 0
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for user_id in users:
            for prompt in OFF_TOPIC_PROMPTS:
                body = {"user_id": user_id, "agent_id": AGENT, "prompt": prompt}
                answer = client.post("/v1/context", json={**body, "session_id": "off-topic"})
                answer.raise_for_status()
                injected += len(answer.json()["memories"])
                empty += not answer.json()["memories"]
    return empty, len(users) * len(OFF_TOPIC_PROMPTS), injected


def skipped_captures(stack: BenchStack) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        return client.get("/v1/pipeline").json().get("episodes", {})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--home", type=Path, help="reuse this MUMA_HOME (ingest skipped if done)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N (0: all)")
    parser.add_argument("--json", type=Path)
    add_setting_variant(parser)
    args = parser.parse_args()
    turns, questions = load(args.data)
    if args.questions:
        questions = questions[: args.questions]
    env = setting_variant(parser, args)
    with BenchStack(env=env, tenant_id=TENANT, home=args.home, keep=args.home is not None) as stack:
        marker = stack.home / f"agent-{INGESTED_MARKER}"
        ingest_s, echoes = None, None
        if not marker.exists():
            ingest_s = ingest_users(stack, turns)
            echoes = echo_sessions(stack, turns)
            marker.write_text(str(ingest_s))
            print(f"ingested both users in {ingest_s:.0f}s; {echoes} echoes captured")
        results = measure(stack, questions)
        results.update(
            turns=len(turns),
            questions=len(questions),
            ingest_seconds=ingest_s,
            echoes=echoes,
            settings=env or "defaults",
            pipeline=skipped_captures(stack),
        )
    print(f"results: {write_results('locomo-agent', results, args.json)}")


def measure(stack: BenchStack, questions: list[Question]) -> dict[str, Any]:
    extra = {"questions": len(questions)}
    clean = report(
        query_api(stack, questions, lambda q: clean_user(q.conversation)),
        questions,
        extra,
        "LoCoMo, user and assistant, no chatter",
    )
    api = query_api(stack, questions, lambda q: agent_user(q.conversation))
    agent = report(api, questions, extra, "LoCoMo as an agent session (with chatter)")
    share, kinds = chatter_share(api["injected"])
    users = sorted({agent_user(q.conversation) for q in questions})
    empty, asked, off_injected = off_topic_blocks(stack, users)
    loss = clean["overall"]["R@10"] - agent["overall"]["R@10"]
    rows = [
        Row("R@10 lost to chatter", fmt(loss, 3), "≤ 0.02", loss <= 0.02),
        Row("chatter share of injected memories", fmt(share, 3), "≤ 0.05", share <= 0.05),
        Row("injected chatter by kind", ", ".join(f"{k} {v}" for k, v in kinds.most_common())),
        Row("off-topic prompts answered with no memory", f"{empty} of {asked}"),
        Row("memories injected for off-topic prompts", str(off_injected)),
    ]
    print_table("What the chatter costs", rows)
    compare("Clean and agent session", {"clean": clean["recall"], "agent": agent["recall"]})
    return {
        "clean": clean,
        "agent": agent,
        "r10_lost": round(loss, 4),
        "chatter_share": round(share, 4),
        "chatter_kinds": dict(kinds),
        "off_topic": {"asked": asked, "empty": empty, "memories_injected": off_injected},
    }


if __name__ == "__main__":
    main()
