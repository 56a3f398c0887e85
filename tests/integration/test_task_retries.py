"""Transient failures are retried with growing, jittered delays; after the last attempt
every episode of the failed task gets its own dead letter, visible to its tenant, and is
kept as `failed` until a retry of that letter finishes it.

A real worker with the LLM configured runs on its own broker database; the fake model
server answers 503 (a TransientError) until the test lets it answer.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.notes.models import Note, NoteSource
from memory.ops.dead_letters import TaskFailure, mark_for_retry, record_task_failure
from memory.ops.models import DeadLetter
from tests.conftest import llm_worker
from tests.support.fake_openai import FakeOpenAI, HttpError
from tests.support.helpers import bearer, new_note, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration

ATTEMPTS = 3
BACKOFF = 0.5


class Outage:
    """503 for every chat request while `down`; otherwise extraction answers one fact."""

    def __init__(self) -> None:
        self.down = True

    def __call__(self, request: dict[str, Any]) -> str | HttpError:
        if self.down:
            return HttpError(503, "model overloaded")
        turn = request["messages"][-1]["content"].split("Turn: ", 1)[-1]
        return json.dumps({"facts": [{"text": f"Fact: {turn}", "kind": "stable"}]})


@pytest.fixture(scope="module")
def outage_stack(database_url: str, redis_url: str) -> Iterator[tuple[FakeOpenAI, Outage, Any]]:
    outage = Outage()
    settings = {
        "MUMA_PIPELINE__MAX_ATTEMPTS": str(ATTEMPTS),
        "MUMA_PIPELINE__RETRY_BACKOFF_SECONDS": str(BACKOFF),
    }
    with llm_worker(database_url, redis_url, outage, "retry", **settings) as (server, producer):
        yield server, outage, producer


def _capture(tenant_id: str, user_id: str, *contents: str) -> list[uuid.UUID]:
    episodes = [
        EpisodeInput(
            user_id=user_id, agent_id="a1", session_id="s1", role="user", content=c, speaker="Ann"
        )
        for c in contents
    ]
    with session_scope() as session:
        captured = capture_episodes(session=session, tenant_id=tenant_id, episodes=episodes)
    return [episode_id for episode_id, _ in captured]


def test_a_transient_failure_is_retried_with_backoff_then_dead_lettered_per_episode(
    outage_stack: Any, api_client: TestClient, tenant_id: str, user_id: str, tokens: dict[str, str]
) -> None:
    server, outage, producer = outage_stack
    before = len(server.requests)
    first, second = _capture(tenant_id, user_id, "I moved to Lisbon.", "I sold my old car.")
    producer.send_task("tasks.pipeline.process_episodes", args=[[str(first), str(second)]])
    wait_for_episodes([first, second], timeout=60)

    # Each attempt stops at the first episode's 503: one request per attempt.
    arrivals = [r.at for r in server.requests[before:]]
    assert len(arrivals) == ATTEMPTS
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    for retries, gap in enumerate(gaps):
        ceiling = BACKOFF * 2**retries
        assert 0.5 * ceiling - 0.05 <= gap <= ceiling + 1.5, (retries, gaps)

    with session_scope() as session:
        letters = list(session.scalars(select(DeadLetter).where(DeadLetter.tenant_id == tenant_id)))
        statuses = {
            e.id: (e.status, e.content)
            for e in session.scalars(select(Episode).where(Episode.id.in_([first, second])))
        }
    assert sorted(str(letter.episode_id) for letter in letters) == sorted([str(first), str(second)])
    for letter in letters:
        assert letter.task_name == "tasks.pipeline.process_episodes"
        assert letter.args == [[str(letter.episode_id)]]
        assert letter.attempts == ATTEMPTS and "503" in letter.error
    assert statuses == {
        first: ("failed", "I moved to Lisbon."),
        second: ("failed", "I sold my old car."),
    }

    operator = bearer(tokens["operator"])
    listed = api_client.get("/v1/dead-letters", headers=operator).json()["dead_letters"]
    assert {d["id"] for d in listed} == {str(letter.id) for letter in letters}
    pipeline = api_client.get("/v1/pipeline", headers=bearer(tokens["agent"])).json()
    assert pipeline["dead_letters"] == 2 and pipeline["episodes"]["failed"] == 2

    outage.down = False
    retried = next(letter for letter in letters if letter.episode_id == second)
    _retry_through(producer, retried.id, tenant_id)
    try:
        wait_until(lambda: _status(second) == "done", timeout=60)
    except AssertionError as exc:
        raise AssertionError(_pipeline_state(second)) from exc
    assert _status(first) == "failed"  # its own letter was not retried


def _retry_through(producer: Any, dead_letter_id: uuid.UUID, tenant_id: str) -> None:
    """What POST /v1/dead-letters/{id}/retry does, sent to this module's worker."""
    with session_scope() as session:
        letter = mark_for_retry(session=session, dead_letter_id=dead_letter_id, tenant_id=tenant_id)
        task_name, args, kwargs = letter.task_name, letter.args, letter.kwargs
    producer.send_task(task_name, args=args, kwargs=kwargs)


def _status(episode_id: uuid.UUID) -> str:
    with session_scope() as session:
        episode = session.get(Episode, episode_id)
        assert episode is not None
        return episode.status


def _two_notes(tenant_id: str, user_id: str) -> tuple[uuid.UUID, uuid.UUID, list[str]]:
    """An unfinished and a finished episode, each with one note: (open, done, note ids)."""
    open_episode, done_episode = _capture(tenant_id, user_id, "I like tea.", "I like rain.")
    with session_scope() as session:
        notes = [new_note(tenant_id, user_id, "Ann likes tea."), new_note(tenant_id, user_id, "x")]
        session.add_all(notes)
        session.flush()
        for note, episode_id in zip(notes, (open_episode, done_episode), strict=True):
            session.add(NoteSource(note_id=note.id, episode_id=episode_id))
        session.get(Episode, done_episode).status = "done"  # type: ignore[union-attr]
        return open_episode, done_episode, [str(n.id) for n in notes]


def test_a_failed_note_batch_is_dead_lettered_per_episode_keeping_finished_ones_done(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    open_episode, done_episode, note_ids = _two_notes(tenant_id, user_id)
    failure = TaskFailure("tasks.pipeline.link", [note_ids], {}, "TransientError: x", None, 5)
    with session_scope() as session:
        letters = record_task_failure(session=session, failure=failure)
        by_episode = {letter.episode_id: (letter.args, letter.tenant_id) for letter in letters}
    assert by_episode == {
        open_episode: ([[note_ids[0]]], tenant_id),
        done_episode: ([[note_ids[1]]], tenant_id),
    }
    assert _status(open_episode) == "failed"
    assert _status(done_episode) == "done"  # its notes are searchable: not marked failed


def test_a_mapping_argument_is_split_by_its_keys_and_a_single_id_kept_as_it_was(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    open_episode, done_episode, note_ids = _two_notes(tenant_id, user_id)
    linked = {note_ids[0]: ["n1"], note_ids[1]: ["n2"]}
    evolve = TaskFailure("tasks.pipeline.evolve", [linked], {}, "LlmOutputError: x", None, 1)
    single = TaskFailure("tasks.example", [str(open_episode), "at"], {}, "Boom: x", None, 1)
    with session_scope() as session:
        letters = record_task_failure(session=session, failure=evolve)
        letters += record_task_failure(session=session, failure=single)
        found = sorted(((str(d.episode_id), d.task_name), d.args) for d in letters)
    assert found == sorted(
        [
            ((str(open_episode), "tasks.pipeline.evolve"), [{note_ids[0]: ["n1"]}]),
            ((str(done_episode), "tasks.pipeline.evolve"), [{note_ids[1]: ["n2"]}]),
            ((str(open_episode), "tasks.example"), [str(open_episode), "at"]),
        ]
    )


def _pipeline_state(episode_id: uuid.UUID) -> str:
    """The episode, its notes and the database's backlog, for a failure message."""
    with session_scope() as session:
        episode = session.get(Episode, episode_id)
        notes = session.execute(
            select(Note.status, Note.embedding.is_not(None))
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id == episode_id)
        ).all()
        pending = session.scalar(select(func.count()).where(Note.status == "pending"))
        queued = session.scalar(select(func.count()).where(Episode.status == "queued"))
    state = (episode.status, episode.attempts, episode.error) if episode else None
    return f"episode {state}; notes (status, embedded) {notes}; pending {pending}, queued {queued}"
