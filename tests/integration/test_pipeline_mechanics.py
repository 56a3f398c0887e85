"""Write-path mechanics with real PostgreSQL, Redis and Celery (issue 3, Pipeline).

Checked: each pipeline task's queue, by the app's router and by where a published message
lands in Redis; embedding batched across episodes (one model call for several episodes,
then nothing left to embed); follow-ups enqueued only once their notes are committed;
extract, decide and link idempotent when run twice; and the rule-based fields (resolved
speaker, domain, kind, keywords, tags, occurred_at) a real worker stores for a capture.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import func, select

import tasks.pipeline as pipeline
from memory.clients.embedder import Embedder, get_embedder
from memory.config import get_settings, load_settings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.pipeline import extract_episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.models import Link
from memory.links.pipeline import link_notes
from memory.notes.embed import embed_pending_notes
from memory.notes.models import Note, NoteSource
from memory.notes.pipeline import Outcome, decide_notes
from memory.notes.rules import DOMAIN_LEXICON, TAG_LEXICON
from memory.ops.models import AuditEvent
from tasks.app import app, create_celery_app
from tests.conftest import CLAIM_KEY, worker_broker_url
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

QUEUE_OF_TASK = {
    "tasks.pipeline.process_episodes": "ingest",
    "tasks.pipeline.decide": "ingest",
    "tasks.pipeline.link": "ingest",
    "tasks.pipeline.embed_notes": "embed",
    "tasks.pipeline.evolve": "llm",
}
KOMBU_PRIORITY_SEP = "\x06\x16"  # kombu's Redis transport: "<queue><sep><priority>" lists


class CountingEmbedder(Embedder):
    """The real embedder of the test settings, recording the texts of each model call."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.calls: list[list[str]] = []

    def _embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def _capture(tenant_id: str, turns: list[tuple[str, str, str]]) -> list[uuid.UUID]:
    """Store (user, session, content) turns spoken by Alice; return their episode ids."""
    common = {"agent_id": "main", "role": "user", "speaker": "Alice"}
    inputs = [EpisodeInput(user_id=u, session_id=s, content=c, **common) for u, s, c in turns]
    with session_scope() as session:
        stored = capture_episodes(session=session, tenant_id=tenant_id, episodes=inputs)
    return [episode_id for episode_id, _ in stored]


def _extract(episode_id: uuid.UUID) -> list[uuid.UUID]:
    with session_scope() as session:
        return extract_episode(
            session=session, episode_id=episode_id, settings=get_settings(), llm=None
        )


def _embed(embedder: Embedder | None = None) -> list[uuid.UUID]:
    with session_scope() as session:
        batch = embed_pending_notes(session=session, embedder=embedder or get_embedder(), limit=500)
    return batch.embedded


def _decide(note_ids: list[uuid.UUID]) -> list[Outcome]:
    with session_scope() as session:
        return decide_notes(session=session, note_ids=note_ids, settings=get_settings(), llm=None)


def _pending(tenant_id: str, user_id: str, texts: list[str]) -> list[uuid.UUID]:
    """Capture each text in its own session, extract and embed: the notes to decide."""
    episodes = _capture(tenant_id, [(user_id, f"s{i}", text) for i, text in enumerate(texts)])
    note_ids = [note for episode in episodes for note in _extract(episode)]
    assert set(_embed()) >= set(note_ids)
    return note_ids


def _counts(user_id: str) -> dict[str, int]:
    """Rows of one user's write path: notes, their provenance, audit events and links."""
    with session_scope() as session:
        count: Callable[[Any], int] = lambda q: int(session.scalar(q) or 0)  # noqa: E731
        return {
            "notes": count(select(func.count()).where(Note.user_id == user_id)),
            "note_sources": count(
                select(func.count())
                .select_from(NoteSource)
                .join(Note, Note.id == NoteSource.note_id)
                .where(Note.user_id == user_id)
            ),
            "events": count(select(func.count()).where(AuditEvent.user_id == user_id)),
            "links": count(select(func.count()).where(Link.user_id == user_id)),
        }


def _committed(note_ids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[str, bool]]:
    """What another connection sees of the notes: {id: (status, embedded)}."""
    with session_scope() as session:
        rows = session.execute(
            select(Note.id, Note.status, Note.embedding.is_not(None)).where(Note.id.in_(note_ids))
        ).all()
    return {row[0]: (row[1], bool(row[2])) for row in rows}


@pytest.fixture(scope="module")
def scratch_broker(redis_url: str) -> str:
    """A Redis database of its own that no worker consumes, emptied but for its claim."""
    url = worker_broker_url(redis_url)
    client = redis.Redis.from_url(url)
    for key in client.scan_iter():
        if key != CLAIM_KEY.encode():
            client.delete(key)
    return url


def test_each_pipeline_task_is_routed_to_its_areas_queue() -> None:
    routed = {name: app.amqp.router.route({}, name)["queue"].name for name in QUEUE_OF_TASK}
    assert routed == QUEUE_OF_TASK


def test_a_published_embed_task_lands_in_the_embed_queues_redis_list(scratch_broker: str) -> None:
    producer = create_celery_app(load_settings(redis_url=scratch_broker))
    try:
        producer.send_task("tasks.pipeline.embed_notes", priority=pipeline.PRIORITY_EMBED)
    finally:
        producer.close()
    client = redis.Redis.from_url(scratch_broker)
    lists = [k.decode() for k in client.scan_iter() if client.type(k) == b"list"]
    assert [key.split(KOMBU_PRIORITY_SEP)[0] for key in lists] == ["embed"]
    [message] = client.lrange(lists[0], 0, -1)
    assert json.loads(message)["headers"]["task"] == "tasks.pipeline.embed_notes"


def test_one_model_call_embeds_the_notes_of_five_episodes_and_a_second_run_embeds_nothing(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = [
        "I adopted a beagle.",
        "My sister lives in Porto.",
        "I run marathons.",
        "Our kitchen is green.",
        "I work as a nurse.",
    ]
    turns = [(f"{user_id}-{i}", f"session-{i}", text) for i, text in enumerate(texts)]
    note_ids = [note for episode in _capture(tenant_id, turns) for note in _extract(episode)]
    assert len(note_ids) == 5
    with session_scope() as session:
        embed_texts = list(session.scalars(select(Note.embed_text).where(Note.id.in_(note_ids))))
    counting = CountingEmbedder(get_embedder())
    assert sorted(_embed(counting)) == sorted(note_ids)
    assert len(counting.calls) == 1
    assert sorted(counting.calls[0]) == sorted(embed_texts)
    assert _committed(note_ids) == {note_id: ("pending", True) for note_id in note_ids}
    assert _embed(counting) == []
    assert len(counting.calls) == 1  # nothing left: the model is not called again


def test_follow_ups_are_enqueued_only_once_their_notes_are_committed(
    monkeypatch: pytest.MonkeyPatch, database_url: str, redis_url: str, tenant_id: str, user_id: str
) -> None:
    seen: dict[str, list[Any]] = {"schedule": [], "decide": [], "link": []}
    [episode_id] = _capture(tenant_id, [(user_id, "s1", "I adopted a beagle called Biscuit.")])

    def on_schedule() -> None:
        with session_scope() as session:
            query = select(NoteSource.note_id).where(NoteSource.episode_id == episode_id)
            seen["schedule"].append(_committed(list(session.scalars(query))))

    def recorder(stage: str) -> Callable[..., None]:
        def record(args: tuple[list[str]], kwargs: Any = None, **options: Any) -> None:
            ids = [uuid.UUID(i) for i in args[0]]
            seen[stage].append((ids, _committed(ids)))

        return record

    monkeypatch.setattr(pipeline, "schedule_embedding", on_schedule)
    monkeypatch.setattr(pipeline.decide, "apply_async", recorder("decide"))
    monkeypatch.setattr(pipeline.link, "apply_async", recorder("link"))

    pipeline.process_episodes.apply(([str(episode_id)],), {"queued_at": time.time()}, throw=True)
    [notes] = seen["schedule"]
    assert list(notes.values()) == [("pending", False)]  # visible to another connection
    [note_id] = notes

    pipeline.embed_notes.apply(throw=True)
    [(handed, state)] = seen["decide"]
    assert note_id in handed
    assert set(state) == set(handed) and all(embedded for _, embedded in state.values())

    pipeline.decide.apply(([str(note_id)],), throw=True)
    [(handed, state)] = seen["link"]
    assert handed == [note_id] and state == {note_id: ("active", True)}


def test_extracting_an_episode_twice_creates_nothing_the_second_time(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    [episode_id] = _capture(tenant_id, [(user_id, "s1", "My sister lives in Porto.")])
    first = _extract(episode_id)
    after_first = _counts(user_id)
    assert len(first) == 1 and after_first["notes"] == after_first["note_sources"] == 1
    assert _extract(episode_id) == first
    assert _counts(user_id) == after_first
    assert set(first) <= set(_embed())
    _decide(first)  # no pending note is left behind for the other tests


@pytest.mark.parametrize(
    "with_fresh_note",
    [
        pytest.param(False, id="same-ids"),
        pytest.param(True, id="same-ids-and-a-fresh-note"),
    ],
)
def test_deciding_the_same_notes_twice_adds_no_note_provenance_or_audit_event(
    with_fresh_note: bool, database_url: str, tenant_id: str, user_id: str
) -> None:
    note_ids = _pending(tenant_id, user_id, ["My favourite colour is blue."] * 2)
    first = _decide(note_ids)
    assert [o.decision.action for o in first] == ["ADD", "NOOP"]
    after_first = _counts(user_id)
    assert after_first == {"notes": 1, "note_sources": 2, "events": 2, "links": 0}
    # Redelivered alone, or together with a note that is still pending:
    fresh = _pending(tenant_id, user_id, ["My sister lives in Porto."]) if with_fresh_note else []
    again = _decide([*note_ids, *fresh])
    assert [(o.note_id, o.decision.action) for o in again] == [(i, "ADD") for i in fresh]
    added = len(fresh)  # the fresh note's own row, provenance and audit event
    assert _counts(user_id) == {k: v + added * (k != "links") for k, v in after_first.items()}


def test_linking_the_same_notes_twice_adds_no_link(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = [
        "We hiked to the glacier lake on Monday.",
        "On Tuesday we hiked up to the mountain hut.",
        "We hiked through the pine forest on Friday.",
    ]
    active = [o.active_id for o in _decide(_pending(tenant_id, user_id, texts)) if o.active_id]
    assert len(active) == 3

    def links() -> set[tuple[uuid.UUID, uuid.UUID, str]]:
        with session_scope() as session:
            rows = session.execute(
                select(Link.source_id, Link.target_id, Link.kind).where(Link.user_id == user_id)
            ).all()
        return {(r[0], r[1], r[2]) for r in rows}

    with session_scope() as session:
        link_notes(session=session, note_ids=active, settings=get_settings())
    once = links()
    assert once and {kind for *_, kind in once} == {"related"}
    with session_scope() as session:
        link_notes(session=session, note_ids=active, settings=get_settings())
    assert _counts(user_id)["links"] == len(once) and links() == once


def test_the_worker_stores_the_rule_based_fields_of_a_captured_turn(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> None:
    body = {
        "user_id": user_id,
        "agent_id": "main",
        "session_id": "s1",
        "role": "user",
        "speaker": "Alice",
        "content": "My doctor changed my medication last week.",
        "occurred_at": "2024-03-05T10:00:00Z",
    }
    response = api_client.post("/v1/episodes", json=body, headers=bearer(tokens["agent"]))
    assert response.status_code == 202, response.text
    [episode_id] = response.json()["episode_ids"]
    wait_for_episodes([episode_id], timeout=60)
    with session_scope() as session:
        episode = session.get(Episode, uuid.UUID(episode_id))
        [note] = session.scalars(select(Note).where(Note.user_id == user_id)).all()
    assert episode is not None and episode.status == "done" and episode.decision == "ADD"
    assert note.status == "active"
    assert note.content == "Alice's doctor changed Alice's medication last week."
    assert note.domain == "health" and "health" in DOMAIN_LEXICON
    assert note.kind == "episodic"  # no decision, stable-fact or preference pattern
    assert note.keywords == ["doctor", "changed", "medication", "last", "week"]
    assert note.tags == ["health"] and "health" in TAG_LEXICON
    assert note.occurred_at == episode.occurred_at == datetime(2024, 3, 5, 10, tzinfo=UTC)
    assert note.occurred_at.date() == date(2024, 3, 5)
