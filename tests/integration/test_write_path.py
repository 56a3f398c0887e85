"""The write path end to end: HTTP capture → real Celery worker → notes with provenance."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.links.models import Link
from memory.notes.models import Note, NoteSource
from tests.support.helpers import bearer, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration


def _episode(user_id: str, content: str, **extra: object) -> dict[str, object]:
    return {
        "user_id": user_id,
        "agent_id": "assistant-1",
        "session_id": "s1",
        "role": "user",
        "content": content,
        "speaker": "Alice",
        **extra,
    }


@pytest.fixture()
def agent_headers(tokens: dict[str, str]) -> dict[str, str]:
    return bearer(tokens["agent"])


def test_capture_becomes_a_note_with_provenance(
    api_client: TestClient, celery_worker: str, agent_headers: dict[str, str], user_id: str
) -> None:
    body = {
        "episodes": [
            _episode(
                user_id,
                "I adopted a beagle called Biscuit last spring.",
                occurred_at="2023-05-08T13:56:00Z",
                metadata={"dia_id": "D1:1"},
            ),
            _episode(
                user_id,
                "My sister lives in Porto and works as a nurse.",
                metadata={"dia_id": "D1:2"},
            ),
        ]
    }
    response = api_client.post("/v1/episodes", json=body, headers=agent_headers)
    assert response.status_code == 202, response.text
    episode_ids = response.json()["episode_ids"]
    assert len(episode_ids) == 2
    wait_for_episodes(episode_ids)
    with session_scope() as session:
        notes = list(
            session.scalars(select(Note).where(Note.user_id == user_id, Note.status == "active"))
        )
        assert len(notes) == 2
        biscuit = next(n for n in notes if "Biscuit" in n.content)
        assert biscuit.embedding is not None and biscuit.embedding_model
        assert biscuit.term_count > 0 and "2023" in (biscuit.index_text or "")
        assert biscuit.occurred_at.year == 2023
        sources = list(
            session.scalars(select(NoteSource.episode_id).where(NoteSource.note_id == biscuit.id))
        )
        assert [str(s) for s in sources] == [episode_ids[0]]
    detail = api_client.get(
        f"/v1/memories/{biscuit.id}",
        params={"user_id": user_id, "agent_id": "assistant-1"},
        headers=agent_headers,
    )
    assert detail.status_code == 200, detail.text
    assert detail.json()["sources"][0]["metadata"] == {"dia_id": "D1:1"}


def test_idempotency_key_returns_same_id_and_processes_once(
    api_client: TestClient, celery_worker: str, agent_headers: dict[str, str], user_id: str
) -> None:
    episode = _episode(
        user_id, "Our wedding anniversary is on 14 June.", idempotency_key=f"k-{user_id}"
    )
    first = api_client.post("/v1/episodes", json=episode, headers=agent_headers).json()[
        "episode_ids"
    ]
    second = api_client.post("/v1/episodes", json=episode, headers=agent_headers).json()[
        "episode_ids"
    ]
    both = api_client.post(
        "/v1/episodes", json={"episodes": [episode, episode]}, headers=agent_headers
    )
    assert first == second == both.json()["episode_ids"][:1] == both.json()["episode_ids"][1:]
    wait_for_episodes(first)
    with session_scope() as session:
        assert (
            session.scalar(
                select(func.count()).select_from(Episode).where(Episode.user_id == user_id)
            )
            == 1
        )
        assert (
            session.scalar(select(func.count()).select_from(Note).where(Note.user_id == user_id))
            == 1
        )


def test_explicit_memory_add_noop_update_and_history(
    api_client: TestClient, celery_worker: str, agent_headers: dict[str, str], user_id: str
) -> None:
    def write(content: str) -> dict[str, object]:
        body = {
            "user_id": user_id,
            "agent_id": "assistant-1",
            "content": content,
            "kind": "preference",
            "speaker": "Alice",
        }
        response = api_client.post("/v1/memories?wait=20", json=body, headers=agent_headers)
        assert response.status_code == 201, response.text
        return response.json()

    added = write("My favourite colour is blue.")
    assert added["decision"] == "ADD" and len(added["note_ids"]) == 1
    same = write("My favourite colour is blue.")
    assert same["decision"] == "NOOP" and same["note_ids"] == added["note_ids"]
    updated = write("My favourite colour is green.")
    assert updated["decision"] == "UPDATE"
    new_id = updated["note_ids"][0]
    params = {"user_id": user_id, "agent_id": "assistant-1"}
    history = api_client.get(
        f"/v1/memories/{new_id}/history", params=params, headers=agent_headers
    ).json()
    assert [h["version"] for h in history] == [1, 2]
    old, new = history
    assert (
        "blue" in old["content"] and old["valid_to"] is not None and old["superseded_by"] == new_id
    )
    assert "green" in new["content"] and new["valid_to"] is None
    # The reinforced first version carries the provenance of both identical writes.
    assert len(old["sources"]) == 2

    forgotten = api_client.delete(f"/v1/memories/{new_id}", params=params, headers=agent_headers)
    assert forgotten.status_code == 200 and forgotten.json()["status"] == "deleted"
    history = api_client.get(
        f"/v1/memories/{new_id}/history", params=params, headers=agent_headers
    ).json()
    assert len(history) == 2 and history[1]["status"] == "deleted"


def test_related_notes_are_linked_both_ways(
    api_client: TestClient, celery_worker: str, agent_headers: dict[str, str], user_id: str
) -> None:
    ids = []
    for content in (
        "I go hiking in the Alps every summer.",
        "My brother bought new hiking boots for our Alps trip.",
    ):
        body = {
            "user_id": user_id,
            "agent_id": "assistant-1",
            "content": content,
            "speaker": "Alice",
        }
        ids += api_client.post("/v1/memories?wait=20", json=body, headers=agent_headers).json()[
            "note_ids"
        ]
    a, b = (uuid.UUID(i) for i in ids)
    assert a != b

    def edges() -> set[tuple[uuid.UUID, uuid.UUID]]:
        with session_scope() as session:
            query = select(Link.source_id, Link.target_id).where(
                Link.kind == "related", Link.user_id == user_id
            )
            return {(row[0], row[1]) for row in session.execute(query)}

    wait_until(lambda: {(a, b), (b, a)} <= edges(), timeout=20)


def test_pipeline_status(api_client: TestClient, agent_headers: dict[str, str]) -> None:
    body = api_client.get("/v1/pipeline", headers=agent_headers).json()
    assert set(body["episodes"]) == {"queued", "processing", "done", "failed"}
    assert isinstance(body["dead_letters"], int)
    assert set(body["queues"]) == {"ingest", "embed", "llm", "maintenance"}
