"""The write path end to end: HTTP capture → real Celery worker → notes with provenance."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.clients.embedder import Embedder, get_embedder
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.pipeline import extract_episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.models import Link
from memory.notes.embed import embed_pending_notes
from memory.notes.models import Note, NoteSource
from memory.notes.pipeline import decide_notes
from memory.notes.window import lock_note_windows, refresh_windows, window_vector
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
        # Both turns are one session: each window blends the other turn's vector in.
        assert_windows_derived(sorted(notes, key=lambda n: n.turn_seq))
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
    assert forgotten.status_code == 200 and forgotten.json()["versions"] == 2  # both erased
    history = api_client.get(f"/v1/memories/{new_id}/history", params=params, headers=agent_headers)
    assert history.status_code == 404


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


def assert_windows_derived(notes: Sequence[Note]) -> None:
    """Each note's window is the weighted blend of its own vector and its session
    neighbours' (notes: one session, one note per turn, in turn order)."""
    own = [np.asarray(n.embedding) for n in notes]
    for i, note in enumerate(notes):
        expected = window_vector(own[i], own[max(i - 2, 0) : i][::-1], own[i + 1 : i + 3])
        assert note.window_embedding is not None, note.content
        np.testing.assert_allclose(np.asarray(note.window_embedding), expected, atol=1e-5)


class CountingEmbedder(Embedder):
    """The configured embedder, recording every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.texts: list[str] = []

    def _embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return self.inner.embed(texts)


WALKS = [
    "I adopted a beagle called Biscuit last spring.",
    "My sister works as a nurse in Porto.",
    "The quarterly tax return is due on 30 April.",
    "We repainted the kitchen a pale shade of green.",
    "Our team won the five-a-side football final on Saturday.",
]


def _capture_turns(tenant_id: str, user_id: str, texts: Sequence[str]) -> None:
    """Capture turns of one session and run extraction in process (no worker)."""
    inputs = [
        EpisodeInput(
            user_id=user_id,
            agent_id="assistant-1",
            session_id="walks",
            role="user",
            content=text,
            speaker="Alice",
        )
        for text in texts
    ]
    with session_scope() as session:
        episode_ids = [
            e for e, _ in capture_episodes(session=session, tenant_id=tenant_id, episodes=inputs)
        ]
    with session_scope() as session:
        for episode_id in episode_ids:
            extract_episode(
                session=session, episode_id=episode_id, settings=get_settings(), llm=None
            )


def _embed_and_decide(embedder: Embedder) -> None:
    with session_scope() as session:
        note_ids = embed_pending_notes(session=session, embedder=embedder, limit=500).note_ids
    with session_scope() as session:
        decide_notes(session=session, note_ids=note_ids, settings=get_settings(), llm=None)


def _walk_notes(user_id: str) -> list[Note]:
    with session_scope() as session:
        query = select(Note).where(Note.user_id == user_id, Note.status == "active")
        return sorted(session.scalars(query), key=lambda n: n.turn_seq or 0)


def test_each_note_is_embedded_once_and_its_window_derived(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    _capture_turns(tenant_id, user_id, WALKS)
    embedder = CountingEmbedder(get_embedder())
    _embed_and_decide(embedder)
    notes = _walk_notes(user_id)
    assert len(notes) == len(WALKS)
    # One text per note, its own: the window costs no embedder call.
    assert Counter(embedder.texts) == Counter(n.embed_text for n in notes)
    assert_windows_derived(notes)
    # The lexical window: the turn, then its neighbours nearest first (same session).
    lines = (notes[2].window_text or "").split("\n")
    assert [line.split(":")[0] for line in lines] == ["Alice"] * 5
    for line, word in zip(lines, ["tax", "sister", "kitchen", "beagle", "football"], strict=True):
        assert word in line, (word, line)


def test_a_later_turn_refreshes_its_earlier_neighbours_windows(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    embedder = get_embedder()
    _capture_turns(tenant_id, user_id, WALKS[:4])
    _embed_and_decide(embedder)
    before = {n.id: np.asarray(n.window_embedding) for n in _walk_notes(user_id)}
    _capture_turns(tenant_id, user_id, WALKS[4:])
    _embed_and_decide(embedder)
    notes = _walk_notes(user_id)
    assert len(notes) == 5
    assert_windows_derived(notes)
    # Turns 3 and 4 gained a neighbour (turn 5); turns 1 and 2 are too far to change.
    changed = [not np.allclose(before[n.id], n.window_embedding, atol=1e-6) for n in notes[:4]]
    assert changed == [False, False, True, True]
    # Idempotent: a second refresh of the whole session finds nothing to change.
    with session_scope() as session:
        seeds = lock_note_windows(session=session, note_ids=[n.id for n in notes])
        assert refresh_windows(session=session, seeds=seeds) == 0
