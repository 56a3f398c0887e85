"""Forgetting one memory: what goes, and what other memories keep."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.access.policy import Viewer
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.erasure.forget import forget_memory
from memory.links.models import Link
from memory.notes.models import Note, NoteSource
from tests.support.helpers import bearer, new_note, wait_for_episodes

pytestmark = pytest.mark.integration


def test_a_turn_that_held_two_memories_keeps_the_other_ones_sentence(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> None:
    # Over ~600 characters a promoted working item is split into facts, one note each.
    locker_text = "My locker at the swimming pool is number 42 and its code is 9157. " + (
        "I use the locker every Tuesday and Thursday before my training sessions. " * 4
    )
    tea_text = "My favourite tea is a Japanese sencha from the little shop by the station. " * 4
    who = {"user_id": user_id, "agent_id": "main"}
    item = {"content": f"{locker_text}\n\n{tea_text}", "role": "user"}
    put = api_client.put(
        "/v1/sessions/s-forget/working", json={**who, "items": [item]},
        headers=bearer(tokens["agent"]),
    )  # fmt: skip
    assert put.status_code == 200, put.text
    promoted = api_client.post(
        "/v1/sessions/s-forget/promote", json={**who, "reason": "end"},
        headers=bearer(tokens["agent"]),
    )  # fmt: skip
    assert promoted.status_code == 200, promoted.text
    [episode] = promoted.json()["episode_ids"]
    wait_for_episodes([episode])
    with session_scope() as session:
        ids = list(
            session.scalars(
                select(NoteSource.note_id).where(NoteSource.episode_id == uuid.UUID(episode))
            )
        )
        notes = {n.id: n.content for n in session.scalars(select(Note).where(Note.id.in_(ids)))}
    [locker] = [i for i, c in notes.items() if "9157" in c]
    tea = [i for i, c in notes.items() if "sencha" in c and "9157" not in c]
    response = api_client.delete(
        f"/v1/memories/{locker}", params={"user_id": user_id}, headers=bearer(tokens["admin"])
    )
    assert response.status_code == 200 and response.json()["episodes_redacted"] == 1
    episode_id = uuid.UUID(episode)
    with session_scope() as session:
        episode = session.get_one(Episode, episode_id)
        assert "9157" not in episode.content and "sencha" in episode.content
        assert tea and all(session.get(Note, i) is not None for i in tea)
        assert session.get(Note, locker) is None


def test_forgetting_a_summary_leaves_its_sources_and_their_turns(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    from memory.episodes.service import EpisodeInput, capture_episodes

    with session_scope() as session:
        [(episode_id, _)] = capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[EpisodeInput(user_id, "main", "s", "user", "I swim in the lake.")],
        )
        source = new_note(tenant_id, user_id, "Alice swims in the lake.")
        summary = new_note(tenant_id, user_id, "Alice swims often.", kind="knowledge")
        session.add_all([source, summary])
        session.flush()
        session.add_all(
            [
                NoteSource(note_id=source.id, episode_id=episode_id),
                NoteSource(note_id=summary.id, episode_id=episode_id),
                Link(tenant_id=tenant_id, user_id=user_id, source_id=summary.id,
                     target_id=source.id, kind="consolidates", weight=0.9),
            ]
        )  # fmt: skip
        ids = source.id, summary.id
    with session_scope() as session:
        report = forget_memory(
            session=session,
            viewer=Viewer(tenant_id, user_id, None),
            note_id=ids[1],
            actor="test",
            reason=None,
        )
        assert report.note_ids == [ids[1]] and report.episodes_erased == []
    with session_scope() as session:
        assert session.get(Note, ids[0]) is not None and session.get(Note, ids[1]) is None
        assert session.get_one(Episode, episode_id).content == "I swim in the lake."
    with session_scope() as session:  # forgetting the source takes its summary with it
        forget_memory(
            session=session,
            viewer=Viewer(tenant_id, user_id, None),
            note_id=ids[0],
            actor="test",
            reason=None,
        )
        assert session.get_one(Episode, episode_id).content == ""
