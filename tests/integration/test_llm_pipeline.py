"""The LLM stages through the real `openai` client against a local fake model server.

A worker configured with the LLM runs on its own broker database, so the suite's
deterministic worker never takes these tasks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.notes.models import Note
from memory.ops.models import DeadLetter
from tests.conftest import llm_worker
from tests.support.fake_openai import FakeOpenAI
from tests.support.helpers import bearer, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration


class ModelScript:
    """Answers by task: extraction, decision; `broken` makes every answer invalid JSON."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, request: dict[str, Any]) -> str:
        if self.broken:
            return "Sure! Here are the facts: the user has a dog"
        system = request["messages"][0]["content"]
        if "Extract the discrete facts" in system:
            turn = request["messages"][-1]["content"].split("Turn: ", 1)[1]
            return json.dumps({"facts": [{"text": f"Fact: {turn}", "kind": "stable"}]})
        if "long-term memory" in system:
            return json.dumps({"decision": "ADD", "reason": "new"})
        return json.dumps({"notes": []})


@pytest.fixture(scope="module")
def llm_stack(database_url: str, redis_url: str) -> Iterator[tuple[FakeOpenAI, ModelScript, Any]]:
    script = ModelScript()
    settings = {"MUMA_PIPELINE__MAX_ATTEMPTS": "1"}
    with llm_worker(database_url, redis_url, script, "llm", **settings) as (server, producer):
        yield server, script, producer


def _capture(tenant_id: str, user_id: str, content: str) -> uuid.UUID:
    episode = EpisodeInput(
        user_id=user_id,
        agent_id="a1",
        session_id="s1",
        role="user",
        content=content,
        speaker="Alice",
    )
    with session_scope() as session:
        [(episode_id, _)] = capture_episodes(
            session=session, tenant_id=tenant_id, episodes=[episode]
        )
    return episode_id


def test_llm_extraction_makes_the_notes(llm_stack: Any, tenant_id: str, user_id: str) -> None:
    server, _, producer = llm_stack
    episode_id = _capture(tenant_id, user_id, "I have a dog named Biscuit.")
    producer.send_task("tasks.pipeline.process_episodes", args=[[str(episode_id)]])
    wait_for_episodes([episode_id], timeout=60)
    with session_scope() as session:
        contents = list(session.scalars(select(Note.content).where(Note.user_id == user_id)))
    assert contents == ["Fact: I have a dog named Biscuit."]
    assert any(
        "Extract the discrete facts" in r["messages"][0]["content"] for r in server.chat_requests
    )


def test_invalid_json_twice_dead_letters_and_keeps_the_episode(
    llm_stack: Any,
    api_client: TestClient,
    celery_worker: str,
    tenant_id: str,
    user_id: str,
    tokens: dict[str, str],
) -> None:
    server, script, producer = llm_stack
    script.broken = True
    before = len(server.chat_requests)
    try:
        episode_id = _capture(tenant_id, user_id, "My passport number is X1234567.")
        producer.send_task("tasks.pipeline.process_episodes", args=[[str(episode_id)]])
        wait_for_episodes([episode_id], timeout=60)
    finally:
        script.broken = False
    assert len(server.chat_requests) - before == 2  # the answer and exactly one repair
    with session_scope() as session:
        episode = session.get(Episode, episode_id)
        assert episode is not None and episode.status == "failed"
        assert episode.content == "My passport number is X1234567."
        letter = session.scalar(select(DeadLetter).where(DeadLetter.episode_id == episode_id))
        assert letter is not None and "LlmOutputError" in letter.error
        assert letter.kwargs == {} and letter.args == [[str(episode_id)]]
        assert letter.tenant_id == tenant_id

    listed = api_client.get("/v1/dead-letters", headers=bearer(tokens["operator"])).json()
    assert str(letter.id) in [d["id"] for d in listed["dead_letters"]]
    assert (
        api_client.post(
            f"/v1/dead-letters/{letter.id}/retry", headers=bearer(tokens["viewer"])
        ).status_code
        == 403
    )
    retried = api_client.post(
        f"/v1/dead-letters/{letter.id}/retry", headers=bearer(tokens["operator"])
    )
    assert retried.status_code == 202, retried.text
    # The suite's worker (deterministic stages) takes the retried task.
    wait_until(lambda: _status(episode_id) == "done", timeout=60)
    with session_scope() as session:
        notes = list(session.scalars(select(Note.content).where(Note.user_id == user_id)))
    assert any("X1234567" in c for c in notes)


def _status(episode_id: uuid.UUID) -> str:
    with session_scope() as session:
        episode = session.get(Episode, episode_id)
        return episode.status if episode else "missing"
