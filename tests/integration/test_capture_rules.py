"""What is worth remembering, through the API and the real pipeline: commands,
acknowledgements and echoes of what the service injected are kept as episodes but never
become memories, and the journal says why; a turn that says more keeps what it adds."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note
from tests.conftest import make_token
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

FACT = "My locker code at the Zuiderpark gym is 7319."
MORE = "Also, the staging database moved to host pg-stage-7 on Friday."


def test_commands_acks_and_echoes_are_not_memories(
    api_client: TestClient, celery_worker: str
) -> None:
    tenant, user, session = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("t", "u", "s"))
    token = make_token("agent", tenant)
    agent = bearer(token)

    def capture(*turns: tuple[str, str]) -> list[str]:
        body = [
            {
                "user_id": user,
                "agent_id": "main",
                "session_id": session,
                "role": role,
                "content": content,
                "speaker": "Alice" if role == "user" else None,
            }
            for role, content in turns
        ]
        sent = api_client.post("/v1/episodes", json={"episodes": body}, headers=agent)
        assert sent.status_code in (200, 202), sent.text
        ids = sent.json()["episode_ids"]
        wait_for_episodes(ids, timeout=120)
        return ids

    [fact] = capture(("user", FACT))
    asked = {
        "user_id": user,
        "agent_id": "main",
        "session_id": session,
        "prompt": "What is my locker code at the gym?",
        "timeout_ms": 10000,
    }
    context = api_client.post("/v1/context", json=asked, headers=agent)
    assert context.status_code == 200 and "7319" in context.json()["context"], context.text
    block = context.json()["context"]
    with session_scope() as db:
        [note_id] = db.scalars(select(Note.id).where(Note.user_id == user))
    listing = f"1. [{note_id}] Alice's locker code at the Zuiderpark gym is 7319. (fact)"
    ids = capture(
        ("user", "/reset"),
        ("user", "ok (default)"),
        ("user", f"please pin memory {note_id}"),
        ("assistant", "Your locker code at the Zuiderpark gym is 7319."),
        ("assistant", f"Here is what I found:\n{listing}"),
        ("assistant", block),
        ("assistant", f"{listing}\n{MORE}"),
    )
    with session_scope() as db:
        decisions = dict(
            db.execute(
                select(Episode.id, Episode.decision).where(
                    Episode.id.in_([uuid.UUID(i) for i in ids])
                )
            ).all()
        )
        contents = list(db.scalars(select(Note.content).where(Note.user_id == user)))
    assert [decisions[uuid.UUID(i)] for i in ids] == [
        "SKIP_COMMAND",
        "SKIP_ACK",
        "SKIP_COMMAND",
        "SKIP_ECHO",
        "SKIP_ECHO",
        "SKIP_ECHO",
        "ADD",
    ]
    assert sorted(contents) == sorted(["Alice's locker code at the Zuiderpark gym is 7319.", MORE])
    journal = api_client.get(
        "/v1/journal",
        params={"user_id": user, "session_id": session, "limit": 20},
        headers=bearer(make_token("viewer", tenant)),
    )
    assert journal.status_code == 200, journal.text
    outcomes: dict[str, Any] = {t["episode_id"]: t for t in journal.json()["turns"]}
    assert [outcomes[i]["outcome"] for i in ids[:4]] == [
        "command",
        "acknowledgement",
        "command",
        "echo",
    ]
    assert "repeats what the memory service injected" in outcomes[ids[3]]["why"]
    assert outcomes[fact]["outcome"] == "stored"


def test_an_assistant_turn_in_another_session_is_not_an_echo(
    api_client: TestClient, celery_worker: str
) -> None:
    """The echo rule reads only what was injected into the turn's own session."""
    tenant, user = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    agent = bearer(make_token("agent", tenant))
    base = {"user_id": user, "agent_id": "main"}
    first = {**base, "session_id": "s1", "role": "user", "speaker": "Alice", "content": FACT}
    sent = api_client.post("/v1/episodes", json=first, headers=agent)
    wait_for_episodes(sent.json()["episode_ids"], timeout=120)
    asked = {**base, "session_id": "s1", "prompt": "What is my gym locker code?"}
    assert "7319" in api_client.post("/v1/context", json=asked, headers=agent).json()["context"]
    said = {
        **base,
        "session_id": "s2",
        "role": "assistant",
        "content": "Your locker code at the Zuiderpark gym is 7319.",
    }
    sent = api_client.post("/v1/episodes", json=said, headers=agent)
    [episode_id] = sent.json()["episode_ids"]
    wait_for_episodes([episode_id], timeout=120)
    with session_scope() as db:
        assert db.get(Episode, uuid.UUID(episode_id)).decision != "SKIP_ECHO"
