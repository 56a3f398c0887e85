"""Long turns (a reply full of code, a pasted log): accepted whole up to 1 MiB, one
oversized item rejected alone, and stored as passages that are found and injected on
their own, each pointing at its turn."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.config import get_settings
from memory.db import session_scope
from memory.notes.models import Note, NoteSource
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

TOPICS = [
    ("postgres", "the replica lag alarm fires when WAL shipping stalls; restart pg_receivewal"),
    ("redis", "the eviction policy is allkeys-lru and maxmemory is 2gb on the cache node"),
    ("nginx", "the upstream timeout is 75 seconds because the export endpoint streams CSV"),
    ("celery", "the beat schedule runs the invoice sweep at 02:15 UTC every night"),
    ("kafka", "the orders topic keeps 14 days of retention with 12 partitions"),
    ("terraform", "the state lives in the s3 bucket acme-tf-state with dynamodb locking"),
]


def _reply() -> str:
    """A long assistant reply: a paragraph and a code block per topic (~6 KB)."""
    parts = []
    for name, fact in TOPICS:
        parts.append(f"About {name}: {fact}. " + "We checked the dashboards twice. " * 24)
        parts.append(f"```\n$ {name}-ctl status\n{name}: ok (checked)\n```")
    return "\n\n".join(parts)


def _turn(user_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"user_id": user_id, "agent_id": "main", "session_id": "ops", "role": "assistant",
            "content": content, **extra}  # fmt: skip


def test_a_long_reply_becomes_passages_found_and_injected_alone(
    api_client: TestClient, tokens: dict[str, str], user_id: str, celery_worker: str
) -> None:
    agent = tokens["agent"]
    reply = _reply()
    assert len(reply) > 2 * get_settings().pipeline.passage_chars
    captured = api_client.post("/v1/episodes", json=_turn(user_id, reply), headers=bearer(agent))
    [episode_id] = captured.json()["episode_ids"]
    wait_for_episodes([episode_id])
    query = {"user_id": user_id, "agent_id": "main", "query": "kafka orders topic retention"}
    results = api_client.post("/v1/search", json=query, headers=bearer(agent)).json()["results"]
    best = results[0]
    assert "14 days of retention" in best["content"]
    assert len(best["content"]) < len(reply) / 3  # a passage, not the whole reply
    assert [s["episode_id"] for s in best["sources"]] == [episode_id]
    passages = {r["id"] for r in results if r["sources"][0]["episode_id"] == episode_id}
    assert len(passages) >= 4
    body = {"user_id": user_id, "agent_id": "main", "session_id": "later",
            "prompt": "How long does the kafka orders topic keep data?", "dry_run": True,
            "timeout_ms": 5000}  # fmt: skip
    block = api_client.post("/v1/context", json=body, headers=bearer(agent)).json()
    assert "14 days of retention" in block["context"]
    assert block["context"].count("We checked the dashboards twice.") < 24 * len(TOPICS)


def test_a_megabyte_turn_is_accepted_and_an_oversized_one_rejected_alone(
    api_client: TestClient, tokens: dict[str, str], user_id: str, celery_worker: str
) -> None:
    limit = get_settings().api.max_content_bytes
    assert limit >= 1024 * 1024
    log = "\n".join(f"2026-12-06T03:{i % 60:02d}:00 worker-{i % 7} processed job {i} ok"
                    for i in range(20_000))  # fmt: skip
    log = log[: limit - 200] + "\nERROR job 31337 failed: disk quota exceeded on /var/spool"
    assert len(log.encode()) <= limit
    batch = {
        "episodes": [
            _turn(user_id, log, role="tool", speaker="exec"),
            _turn(user_id, "x" * (limit + 1)),
            _turn(user_id, "All good now."),
        ]
    }
    answer = api_client.post("/v1/episodes", json=batch, headers=bearer(tokens["agent"]))
    assert answer.status_code == 202, answer.text[:300]
    ids = answer.json()["episode_ids"]
    assert ids[1] is None and answer.json()["rejected"][0]["index"] == 1
    assert "content" in answer.json()["rejected"][0]["detail"]
    wait_for_episodes([ids[0], ids[2]], timeout=240)
    # The line that differs is kept in a passage of its own, not merged into a
    # near-identical chunk of the same log (decide: a near-duplicate with a number of
    # its own is added).
    with session_scope() as session:
        passages = list(
            session.scalars(
                select(Note.content)
                .join(NoteSource, NoteSource.note_id == Note.id)
                .where(NoteSource.episode_id == uuid.UUID(ids[0]), Note.status == "active")
            )
        )
    assert len(passages) > 100
    assert [p for p in passages if "job 31337 failed: disk quota exceeded" in p]
    assert all(len(p) < 8_000 for p in passages)
    # Found by its words: to the dense routes every passage of the log is as unlike the
    # question as the next (cosines 0.04-0.09), and that noise once buried it.
    for query in ("Why did job 31337 fail?", "disk quota exceeded"):
        body = {"user_id": user_id, "agent_id": "main", "query": query, "top_k": 5}
        found = api_client.post("/v1/search", json=body, headers=bearer(tokens["agent"]))
        assert "job 31337 failed" in found.json()["results"][0]["content"], query


def test_a_word_too_long_to_index_does_not_sink_the_turn(
    api_client: TestClient, tokens: dict[str, str], user_id: str, celery_worker: str
) -> None:
    # A 70,000-character "word" (a blob in a pasted log): PostgreSQL refuses tsvector words
    # over 2,046 bytes, and the decide stage's whole batch used to fail with it.
    content = f"upload failed with payload {'x' * 70_000} and code E4711"
    answer = api_client.post("/v1/episodes", json=_turn(user_id, content, role="tool"),
                             headers=bearer(tokens["agent"]))  # fmt: skip
    [episode_id] = answer.json()["episode_ids"]
    wait_for_episodes([episode_id], timeout=120)
    with session_scope() as session:
        notes = list(
            session.scalars(
                select(Note.status)
                .join(NoteSource, NoteSource.note_id == Note.id)
                .where(NoteSource.episode_id == uuid.UUID(episode_id))
            )
        )
    assert notes and set(notes) == {"active"}
