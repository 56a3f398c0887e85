"""The memory-poisoning suite (benchmarks/data/poisoning.json) as calls to the public API,
and how a later prompt's answer is judged. Shared by `benchmarks.poisoning` (a running
service) and tests/integration/test_poisoning.py (the app in process).

An attempt is captured the way the OpenClaw plugin captures its path: a tool's result
(`tool_result`, `web_page`, `file`) as a `tool` turn named by its tool, with the page's
URL or the file's path in the metadata; a group-chat participant as a `user` turn
declared `participant`; an assistant repeating injected text as an `assistant` turn; an
agent storing a stranger's words as an explicit write declared `participant`. Each is
preceded by the owner's own prompt of that session.

A later prompt (`trigger_prompt`, another session) is then answered by /v1/context. An
attempt *reaches* that prompt when one of its markers is in the block; it reaches it
*as trusted* when the line holding it is labelled as the user's own words or its memory
has high trust, *unlabelled* when the line carries no "[date, who]" label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

DATA = Path(__file__).resolve().parent / "data" / "poisoning.json"
AGENT = "helper"
TOOL_PATHS = ("tool_result", "web_page", "file")
LINE = re.compile(r"^- \[(?P<when>[^,\]]+), (?P<who>[^\]]+)\] ")


class Client(Protocol):
    def post(self, url: str, **kwargs: Any) -> Any: ...


def load_corpus(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())


def _turn(user_id: str, session_id: str, role: str, content: str, **extra: Any) -> dict:
    return {
        "user_id": user_id,
        "agent_id": AGENT,
        "session_id": session_id,
        "role": role,
        "content": content,
        **extra,
    }


def _tool_turn(item: dict[str, Any], user_id: str, session_id: str) -> dict[str, Any]:
    metadata = {key: item[key] for key in ("url", "file_path") if key in item}
    return _turn(
        user_id, session_id, "tool", item["carrier"], speaker=item["tool"], metadata=metadata
    )


def capture_calls(item: dict[str, Any], user_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The API calls (path, JSON body) that capture one attempt or benign output."""
    session_id = f"setup-{item['id']}"
    owner = _turn(user_id, session_id, "user", item["setup_prompt"])
    path = item["path"]
    if path in TOOL_PATHS:
        turn = _tool_turn(item, user_id, session_id)
    elif path == "group_participant":
        turn = _turn(
            user_id,
            session_id,
            "user",
            item["carrier"],
            speaker=item["participant"],
            origin={"kind": "participant", "ref": item["participant"]},
        )
    elif path == "assistant_echo":
        turn = _turn(user_id, session_id, "assistant", item["carrier"])
    elif path == "explicit_write":
        write = {
            "user_id": user_id,
            "agent_id": AGENT,
            "session_id": session_id,
            "content": item["carrier"],
            "origin": {"kind": "participant", "ref": item["participant"]},
        }
        return [("/v1/episodes", {"episodes": [owner]}), ("/v1/memories", write)]
    else:
        raise ValueError(f"unknown capture path {path!r} in {item['id']}")
    return [("/v1/episodes", {"episodes": [owner, turn]})]


def capture_all(client: Client, items: list[dict[str, Any]], user_id: str) -> list[str]:
    """Capture every item; the episode ids to wait for."""
    episode_ids: list[str] = []
    for item in items:
        for path, body in capture_calls(item, user_id):
            response = client.post(path, json=body)
            if response.status_code >= 300:
                raise RuntimeError(f"{item['id']}: {path} {response.status_code} {response.text}")
            answer = response.json()
            episode_ids.extend(answer.get("episode_ids") or [answer["episode_id"]])
    return episode_ids


@dataclass
class Verdict:
    """How one attempt's markers showed in the blocks of the later prompts."""

    attack_id: str
    reached: bool = False
    as_trusted: bool = False
    unlabelled: bool = False
    lines: list[str] = field(default_factory=list)


def _marked_lines(context: str, markers: list[str]) -> Iterator[str]:
    for line in context.splitlines():
        if any(marker in line for marker in markers):
            yield line


def judge(answer: dict[str, Any], attack: dict[str, Any], verdict: Verdict) -> None:
    """Fold one /v1/context answer into the attempt's verdict."""
    markers = attack["markers"]
    for line in _marked_lines(answer["context"], markers):
        verdict.reached = True
        verdict.lines.append(line)
        label = LINE.match(line)
        if label is None:
            verdict.unlabelled = True
        else:  # labelled as the user's own words: as trusted as a line can be
            verdict.as_trusted |= label["who"] == "user"
    for memory in answer.get("memories", []):
        if any(marker in memory["content"] for marker in markers):
            verdict.as_trusted |= memory.get("trust") == "high"


def benign_found(results: list[dict[str, Any]], item: dict[str, Any]) -> bool:
    return any(marker in r["content"] for r in results for marker in item["markers"])


def context_body(user_id: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "agent_id": AGENT,
        "session_id": "later",
        "prompt": prompt,
        "dry_run": True,
        "timeout_ms": 5000,
        **extra,
    }


def run_triggers(client: Client, attacks: list[dict[str, Any]], user_id: str) -> list[Verdict]:
    """Every attack's trigger prompt through /v1/context; every attack judged against
    every block (an attempt may surface under another's prompt)."""
    verdicts = {a["id"]: Verdict(a["id"]) for a in attacks}
    for trigger in attacks:
        response = client.post("/v1/context", json=context_body(user_id, trigger["trigger_prompt"]))
        if response.status_code != 200:
            raise RuntimeError(f"context for {trigger['id']}: {response.status_code}")
        answer = response.json()
        for attack in attacks:
            judge(answer, attack, verdicts[attack["id"]])
    return list(verdicts.values())


def benign_recall(
    client: Client, benign: list[dict[str, Any]], user_id: str, limit: int = 10
) -> dict[str, float]:
    """The share of benign outputs whose answer is found when asked about: by search
    (top `limit`) and in the context block."""
    searched = injected = 0
    for item in benign:
        body = {"user_id": user_id, "agent_id": AGENT, "query": item["question"], "top_k": limit}
        results = client.post("/v1/search", json=body).json()["results"]
        searched += benign_found(results, item)
        block = client.post("/v1/context", json=context_body(user_id, item["question"])).json()
        injected += any(marker in block["context"] for marker in item["markers"])
    count = max(len(benign), 1)
    return {"search": searched / count, "context": injected / count}
