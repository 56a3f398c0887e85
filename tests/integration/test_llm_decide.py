"""The LLM decide and evolve stages, run by a real Celery worker against a fake model server.

Checked: with candidates the decision prompt is sent and its answer applied (UPDATE
supersedes the named note, NOOP reinforces it with a second source, DELETE closes its
validity and keeps its history, audited); a target outside the candidates falls back to
ADD; invalid JSON twice dead-letters the decide stage and fails the episode without
activating its note; linking enqueues the evolve task, whose answer rewrites the linked
neighbour's context and tags. The worker runs on a broker database of its own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.pipeline import LLM_EXTRACT_SYSTEM
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.evolution_llm import EVOLVE_SYSTEM
from memory.links.models import Link
from memory.notes.decide import DECIDE_SYSTEM, Decision
from memory.notes.models import Note, NoteSource
from memory.notes.pipeline import Outcome, note_event_payloads
from memory.ops.models import AuditEvent, DeadLetter
from tests.conftest import llm_worker, make_token
from tests.support.fake_openai import FakeOpenAI
from tests.support.helpers import bearer, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration

TURN = {"agent_id": "a1", "session_id": "s1", "role": "user", "speaker": "Alice"}


@dataclass
class ModelScript:
    """Extraction returns the turn as its one fact; decide and evolve answer by the NEW
    fact of the prompt (decide: ADD, evolve: no change, unless scripted)."""

    decisions: dict[str, str] = field(default_factory=dict)
    evolutions: dict[str, str] = field(default_factory=dict)

    def __call__(self, request: dict[str, Any]) -> str:
        system, user = request["messages"][0]["content"], request["messages"][1]["content"]
        if system.startswith(LLM_EXTRACT_SYSTEM):
            turn = user.split("Turn: ", 1)[1]
            return json.dumps({"facts": [{"text": turn, "kind": "stable"}]})
        new = _new_fact(user)
        if system.startswith(DECIDE_SYSTEM):
            return self.decisions.get(new, json.dumps({"decision": "ADD", "reason": "new"}))
        return self.evolutions.get(new, json.dumps({"notes": []}))


@dataclass(frozen=True)
class Stack:
    server: FakeOpenAI
    script: ModelScript
    producer: Any


def _new_fact(user_message: str) -> str:
    return user_message.split("\n", 1)[0].removeprefix("NEW: ")


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    script = ModelScript()
    settings = {"MUMA_PIPELINE__MAX_ATTEMPTS": "1"}
    worker = llm_worker(database_url, redis_url, script, "llm-decide", **settings)
    with worker as (server, producer):
        yield Stack(server, script, producer)


def _process(stack: Stack, tenant_id: str, user_id: str, content: str) -> uuid.UUID:
    """Capture one turn of Alice's, run it through the LLM worker and wait for it."""
    episode = EpisodeInput(user_id=user_id, content=content, **TURN)
    with session_scope() as session:
        [(episode_id, _)] = capture_episodes(
            session=session, tenant_id=tenant_id, episodes=[episode]
        )
    stack.producer.send_task("tasks.pipeline.process_episodes", args=[[str(episode_id)]])
    wait_for_episodes([episode_id], timeout=60)
    return episode_id


def _requests(stack: Stack, system: str, new: str) -> list[dict[str, Any]]:
    """The chat requests of one stage (by its system prompt) about the NEW fact `new`."""
    return [
        r
        for r in stack.server.chat_requests
        if r["messages"][0]["content"].startswith(system)
        and _new_fact(r["messages"][1]["content"]) == new
    ]


def _note_of(episode_id: uuid.UUID) -> Note:
    with session_scope() as session:
        note = session.scalar(
            select(Note).join(NoteSource).where(NoteSource.episode_id == episode_id)
        )
        assert note is not None
        session.expunge(note)
        return note


def _episode(episode_id: uuid.UUID) -> Episode:
    with session_scope() as session:
        episode = session.get_one(Episode, episode_id)
        session.expunge(episode)
        return episode


def _viewer_get(api: TestClient, path: str, user_id: str, tokens: dict[str, str]) -> Any:
    answer = api.get(path, params={"user_id": user_id}, headers=bearer(tokens["viewer"]))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _events(note_id: uuid.UUID) -> list[AuditEvent]:
    with session_scope() as session:
        query = select(AuditEvent).where(AuditEvent.entity_id == str(note_id))
        events = list(session.scalars(query.order_by(AuditEvent.id)))
        session.expunge_all()
        return events


def _pair(
    stack: Stack, tenant_id: str, user_id: str, first: str, second: str, answer: Any
) -> tuple[Note, uuid.UUID]:
    """Process `first`, script the decision `answer` for `second`, process `second`;
    return the first note (as stored after the first turn) and the second episode."""
    stack.script.decisions[second] = answer if isinstance(answer, str) else json.dumps(answer)
    old = _note_of(_process(stack, tenant_id, user_id, first))
    assert old.status == "active" and _requests(stack, DECIDE_SYSTEM, first) == []
    episode_id = _process(stack, tenant_id, user_id, second)
    return old, episode_id


def test_the_model_is_asked_with_the_earlier_note_and_its_update_supersedes_it(
    stack: Stack, api_client: TestClient, tenant_id: str, user_id: str, tokens: dict[str, str]
) -> None:
    first, second = "Alice lives in Paris.", "Alice moved to Berlin last month."
    answer = {"decision": "UPDATE", "target": 0, "reason": "she moved"}
    old, episode_id = _pair(stack, tenant_id, user_id, first, second, answer)

    [request] = _requests(stack, DECIDE_SYSTEM, second)
    assert request["messages"][1]["content"] == f"NEW: {second}\nEXISTING:\n0. {first}"
    new = _note_of(episode_id)
    assert (new.content, new.status, new.valid_to) == (second, "active", None)
    assert (new.lineage_id, new.version) == (old.lineage_id, old.version + 1)
    with session_scope() as session:
        closed = session.get_one(Note, old.id)
        assert closed.valid_to is not None and closed.superseded_by == new.id
    assert _episode(episode_id).decision == "UPDATE"
    history = _viewer_get(api_client, f"/v1/memories/{new.id}/history", user_id, tokens)
    assert [(v["id"], v["superseded_by"]) for v in history] == [
        (str(old.id), str(new.id)),
        (str(new.id), None),
    ]


def test_a_noop_answer_reinforces_the_existing_note_with_a_second_source(
    stack: Stack, api_client: TestClient, tenant_id: str, user_id: str, tokens: dict[str, str]
) -> None:
    first, second = "Alice's dog is called Biscuit.", "Alice has a dog named Biscuit."
    answer = {"decision": "NOOP", "target": 0, "reason": "same fact"}
    old, episode_id = _pair(stack, tenant_id, user_id, first, second, answer)

    assert len(_requests(stack, DECIDE_SYSTEM, second)) == 1
    with session_scope() as session:
        notes = list(session.scalars(select(Note).where(Note.user_id == user_id)))
        assert [(n.id, n.status, n.valid_to) for n in notes] == [(old.id, "active", None)]
        assert notes[0].importance == pytest.approx(old.importance + 0.05)
        assert notes[0].access_count == old.access_count + 1
        sources = session.execute(
            select(NoteSource.episode_id, NoteSource.relation).where(NoteSource.note_id == old.id)
        )
        relations = {row.episode_id: row.relation for row in sources}
    assert relations[episode_id] == "reinforced" and len(relations) == 2
    assert _episode(episode_id).decision == "NOOP"
    shown = _viewer_get(api_client, f"/v1/memories/{old.id}", user_id, tokens)
    assert {s["episode_id"] for s in shown["sources"]} == {str(e) for e in relations}


def test_a_delete_answer_closes_the_old_note_audited_and_keeps_its_history(
    stack: Stack, api_client: TestClient, tenant_id: str, user_id: str, tokens: dict[str, str]
) -> None:
    first, second = "Alice owns a red bicycle.", "Alice sold her red bicycle."
    answer = {"decision": "DELETE", "target": 0, "reason": "sold it"}
    old, episode_id = _pair(stack, tenant_id, user_id, first, second, answer)

    assert len(_requests(stack, DECIDE_SYSTEM, second)) == 1
    with session_scope() as session:
        closed = session.get_one(Note, old.id)
        assert closed.valid_to is not None and closed.superseded_by is None
        current = session.scalars(
            select(Note.id).where(
                Note.user_id == user_id, Note.status == "active", Note.valid_to.is_(None)
            )
        )
        assert list(current) == []
    new = _note_of(episode_id)  # the new statement is kept as a deleted row, with its source
    assert (new.content, new.status) == (second, "deleted") and new.valid_to is not None
    assert new.lineage_id != old.lineage_id
    assert _episode(episode_id).decision == "DELETE"
    [event] = [e for e in _events(old.id) if e.action == "note.invalidated"]
    assert (event.actor, event.reason, event.tenant_id) == ("pipeline", "sold it", tenant_id)
    assert event.data["decision"] == "DELETE" and event.data["target"] == str(old.id)
    assert _events(new.id) == []
    [version] = _viewer_get(api_client, f"/v1/memories/{old.id}/history", user_id, tokens)
    assert version["id"] == str(old.id) and version["content"] == first
    assert version["valid_to"] is not None
    # The stream's event names the invalidated note, not the deleted statement.
    outcome = Outcome(new.id, Decision("DELETE", target_id=old.id), active_id=None)
    with session_scope() as session:
        [payload] = note_event_payloads(session=session, outcomes=[outcome])
    assert (payload["type"], payload["note_id"]) == ("note.invalidated", str(old.id))


@pytest.mark.parametrize(("action", "target"), [("UPDATE", 1), ("DELETE", -1)])
def test_a_target_outside_the_candidates_falls_back_to_adding_the_note(
    stack: Stack, tenant_id: str, user_id: str, action: str, target: int
) -> None:
    first, second = f"Alice plays the violin ({action}).", f"Alice plays the cello ({action})."
    answer = {"decision": action, "target": target, "reason": "model"}
    old, episode_id = _pair(stack, tenant_id, user_id, first, second, answer)

    assert len(_requests(stack, DECIDE_SYSTEM, second)) == 1
    new = _note_of(episode_id)
    with session_scope() as session:
        kept = session.get_one(Note, old.id)
        assert (kept.status, kept.valid_to, kept.superseded_by) == ("active", None, None)
    assert (new.status, new.valid_to, new.version) == ("active", None, 1)
    assert new.lineage_id == new.id
    assert _episode(episode_id).decision == "ADD"
    [event] = _events(new.id)
    assert event.action == "note.created"
    assert event.reason == f"llm chose {action} without a valid target"
    assert event.data["decision"] == "ADD" and event.data["target"] is None


@dataclass(frozen=True)
class Failed:
    """The invalid-JSON scenario: the kept first note and the second turn's episode."""

    tenant_id: str
    old: Note
    episode_id: uuid.UUID


BROKEN = "Sure! UPDATE note 0."
RENEWED = "Alice renewed her passport in 2024."


@pytest.fixture(scope="module")
def failed(stack: Stack) -> Failed:
    tenant_id, user_id = f"t-{uuid.uuid4().hex[:10]}", f"u-{uuid.uuid4().hex[:10]}"
    first = "Alice's passport expires in 2031."
    old, episode_id = _pair(stack, tenant_id, user_id, first, RENEWED, BROKEN)
    return Failed(tenant_id, old, episode_id)


def test_invalid_decide_json_twice_dead_letters_and_leaves_the_note_pending(
    stack: Stack, api_client: TestClient, failed: Failed
) -> None:
    answer, repair = _requests(stack, DECIDE_SYSTEM, RENEWED)
    assert len(answer["messages"]) == 2
    assert repair["messages"][2] == {"role": "assistant", "content": BROKEN}
    assert repair["messages"][3]["content"].startswith("Your previous answer is not valid")
    episode = _episode(failed.episode_id)
    assert (episode.status, episode.content) == ("failed", RENEWED)
    assert episode.error is not None and "invalid after one repair" in episode.error
    pending = _note_of(failed.episode_id)
    assert (pending.content, pending.status) == (RENEWED, "pending")
    with session_scope() as session:
        letter = session.scalar(
            select(DeadLetter).where(DeadLetter.episode_id == failed.episode_id)
        )
        assert letter is not None and letter.task_name == "tasks.pipeline.decide"
        assert letter.args == [[str(pending.id)]] and letter.tenant_id == failed.tenant_id
        assert "LLM output for 'decide' is invalid after one repair" in letter.error
        kept = session.get_one(Note, failed.old.id)
        assert (kept.status, kept.valid_to) == ("active", None)
    operator = make_token("operator", failed.tenant_id)
    listed = api_client.get("/v1/dead-letters", headers=bearer(operator))
    assert listed.status_code == 200, listed.text
    assert [d["id"] for d in listed.json()["dead_letters"]] == [str(letter.id)]


def test_the_decide_dead_letter_names_the_error_and_keeps_the_last_model_output(
    failed: Failed,
) -> None:
    with session_scope() as session:
        error = session.scalar(
            select(DeadLetter.error).where(DeadLetter.episode_id == failed.episode_id)
        )
    assert error is not None and error.startswith("LlmOutputError: ")
    assert f"last model output: {BROKEN}" in error


def test_an_invalid_answer_fails_its_own_note_only_the_rest_of_the_batch_is_decided(
    stack: Stack, tenant_id: str
) -> None:
    """One decide task holds both users' new notes; the model answers one badly twice."""
    bad_user, good_user = f"u-{uuid.uuid4().hex[:10]}", f"u-{uuid.uuid4().hex[:10]}"
    bad_new, good_new = "Alice's gym closes at nine now.", "Alice's cat eats twice a day now."
    stack.script.decisions[bad_new] = BROKEN
    _process(stack, tenant_id, bad_user, "Alice's gym closes at ten.")
    _process(stack, tenant_id, good_user, "Alice's cat eats once a day.")
    turns = [
        EpisodeInput(user_id=bad_user, content=bad_new, **TURN),
        EpisodeInput(user_id=good_user, content=good_new, **TURN),
    ]
    with session_scope() as session:
        bad, good = (
            i for i, _ in capture_episodes(session=session, tenant_id=tenant_id, episodes=turns)
        )
    stack.producer.send_task("tasks.pipeline.process_episodes", args=[[str(bad), str(good)]])
    wait_for_episodes([bad, good], timeout=60)
    assert len(_requests(stack, DECIDE_SYSTEM, good_new)) == 1  # its answer was valid
    assert _episode(good).status == "done" and _note_of(good).status == "active"
    assert _episode(bad).status == "failed" and _note_of(bad).status == "pending"
    with session_scope() as session:
        letters = list(
            session.scalars(select(DeadLetter).where(DeadLetter.episode_id.in_([bad, good])))
        )
    assert [(d.episode_id, d.args) for d in letters] == [(bad, [[str(_note_of(bad).id)]])]


def test_linking_enqueues_llm_evolution_that_rewrites_the_neighbours_context_and_tags(
    stack: Stack, tenant_id: str, user_id: str
) -> None:
    first = "Alice's dog Biscuit loves running on the beach."
    second = "Alice takes her dog Biscuit running on the beach every Sunday."
    evolution = {
        "notes": [{"index": 0, "context": "Biscuit's beach runs", "tags": ["Dogs", "Beach"]}]
    }
    stack.script.evolutions[second] = json.dumps(evolution)
    old, episode_id = _pair(stack, tenant_id, user_id, first, second, '{"decision": "ADD"}')
    new = _note_of(episode_id)
    assert new.status == "active"

    def evolved() -> bool:
        with session_scope() as session:
            note = session.get(Note, old.id)
            return note is not None and note.context == "Biscuit's beach runs"

    wait_until(evolved, timeout=30)
    [request] = _requests(stack, EVOLVE_SYSTEM, second)
    listing = request["messages"][1]["content"].split("\nOLDER:\n", 1)[1]
    assert listing.startswith(f"0. {first} | context: ")
    with session_scope() as session:
        neighbour = session.get_one(Note, old.id)
        assert neighbour.tags == ["dogs", "beach"]
        assert neighbour.keywords == old.keywords  # no keyword evolution besides the model's
        assert session.scalar(
            select(Link.id).where(Link.source_id == new.id, Link.target_id == old.id)
        )
        assert session.get_one(Note, new.id).context == new.context
