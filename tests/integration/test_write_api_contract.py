"""The write API's contract (issue 3), value by value.

Checked: `?wait` bounds (0-30 s) and its 202 when the pipeline has not finished or has
failed; `POST /v1/memories` answers 202 `{"episode_id"}` and its options reach the note;
`GET /v1/pipeline` counts the tenant's queued episodes, the ingest queue's depth and its
dead letters; `DELETE /v1/memories/{id}` erases and is audited; the content limit counts
UTF-8 bytes; `occurred_at` defaults to the capture time. "Idle" tests publish through the
API's real Celery app to a Redis database that no worker reads, so episodes stay queued.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import delete, select

from memory.access.models import ApiToken
from memory.access.tokens import hash_token
from memory.config import reset_settings_cache
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.notes.models import Note, NoteSource, Tombstone
from memory.ops.dead_letters import record_dead_letter
from memory.ops.models import AuditEvent
from tasks.app import app as celery_app
from tests.conftest import CLAIM_KEY, worker_broker_url
from tests.support.helpers import bearer, new_note, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration
LIMIT = 1024 * 1024  # api.max_content_bytes, default 1 MiB


@pytest.fixture(scope="module")
def idle_broker_url(redis_url: str) -> str:
    """A Redis database of its own that no Celery worker consumes."""
    return worker_broker_url(redis_url)


@pytest.fixture()
def idle(idle_broker_url: str, tenant_id: str) -> Iterator[None]:
    """The API publishes to (and reports queues of) the idle database for one test; the
    tenant's episodes left queued are removed after it, so no worker takes them along."""
    client = redis.Redis.from_url(idle_broker_url)
    for key in client.scan_iter():
        if key != CLAIM_KEY.encode():
            client.delete(key)
    client.close()
    saved_env = os.environ["MUMA_REDIS_URL"]
    saved = (celery_app.conf.broker_url, celery_app._pool, celery_app.amqp._producer_pool)
    os.environ["MUMA_REDIS_URL"] = idle_broker_url
    reset_settings_cache()
    celery_app.conf.broker_url = idle_broker_url
    celery_app._pool = celery_app.amqp._producer_pool = None
    try:
        yield
    finally:
        # kombu keeps one pool per broker URL and hands it out again: left open, not closed.
        celery_app.conf.broker_url, celery_app._pool, celery_app.amqp._producer_pool = saved
        os.environ["MUMA_REDIS_URL"] = saved_env
        reset_settings_cache()
        with session_scope() as session:
            session.execute(
                delete(Episode).where(
                    Episode.tenant_id.startswith(tenant_id), Episode.status == "queued"
                )
            )


def _memory(
    user_id: str, content: str = "I prefer tea over coffee.", **options: Any
) -> dict[str, Any]:
    return {"user_id": user_id, "agent_id": "main", "content": content, **options}


def _episode(user_id: str, content: str = "I moved to Lisbon.", **extra: Any) -> dict[str, Any]:
    base = {"user_id": user_id, "agent_id": "main", "session_id": "s1", "role": "user"}
    return {**base, "content": content, **extra}


def _episode_status(episode_id: str) -> str:
    with session_scope() as session:
        episode = session.get(Episode, uuid.UUID(episode_id))
        assert episode is not None
        return episode.status


def _dead_letter(episode_id: uuid.UUID) -> None:
    """Record the pipeline's failure of the episode as the worker does after its last try."""
    with session_scope() as session:
        record_dead_letter(
            session=session,
            task_name="tasks.pipeline.process_episodes",
            args=[[str(episode_id)]],
            kwargs={},
            error="ExtractionError: invalid model output",
            traceback=None,
            attempts=3,
            episode_id=episode_id,
        )


def _assert_names_field(response: Response, field: str) -> None:
    assert response.status_code == 422, response.text
    assert [p["field"] for p in response.json()["fields"]] == [field], response.text


@pytest.mark.parametrize("wait", ["31", "-1"])
def test_wait_outside_zero_to_thirty_seconds_is_rejected_naming_wait(
    api_client: TestClient, idle: None, tokens: dict[str, str], user_id: str, wait: str
) -> None:
    response = api_client.post(
        f"/v1/memories?wait={wait}", json=_memory(user_id), headers=bearer(tokens["agent"])
    )
    _assert_names_field(response, "wait")


def test_wait_answers_202_with_the_episode_id_once_the_wait_is_over(
    api_client: TestClient, idle: None, tokens: dict[str, str], user_id: str
) -> None:
    started = time.monotonic()
    response = api_client.post(
        "/v1/memories?wait=1", json=_memory(user_id), headers=bearer(tokens["agent"])
    )
    elapsed = time.monotonic() - started
    assert response.status_code == 202, response.text
    assert list(response.json()) == ["episode_id"]
    assert 1.0 <= elapsed < 5.0
    assert _episode_status(response.json()["episode_id"]) == "queued"


def test_wait_answers_202_as_soon_as_the_pipeline_fails(
    api_client: TestClient, idle: None, tokens: dict[str, str], user_id: str
) -> None:
    """The failure is recorded as the worker records it: a dead letter marks it failed."""
    headers = bearer(tokens["agent"])
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        pending = pool.submit(
            api_client.post, "/v1/memories?wait=20", json=_memory(user_id), headers=headers
        )
        found: list[uuid.UUID] = []

        def captured() -> bool:
            with session_scope() as session:
                found[:] = session.scalars(select(Episode.id).where(Episode.user_id == user_id))
            return bool(found)

        wait_until(captured, timeout=10, interval=0.02)
        _dead_letter(found[0])
        response = pending.result(timeout=30)
    assert response.status_code == 202, response.text
    assert response.json() == {"episode_id": str(found[0])}
    assert time.monotonic() - started < 10


def _written_note(
    client: TestClient, tokens: dict[str, str], user_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Written by the agent without waiting; read back at user level (sees every note)."""
    response = client.post("/v1/memories", json=body, headers=bearer(tokens["agent"]))
    assert response.status_code == 202, response.text
    assert list(response.json()) == ["episode_id"]
    episode_id = response.json()["episode_id"]
    wait_for_episodes([episode_id], timeout=60)
    assert _episode_status(episode_id) == "done"
    with session_scope() as session:
        [note_id] = session.scalars(
            select(NoteSource.note_id).where(NoteSource.episode_id == uuid.UUID(episode_id))
        )
    params = {"user_id": user_id}
    note = client.get(f"/v1/memories/{note_id}", params=params, headers=bearer(tokens["operator"]))
    assert note.status_code == 200, note.text
    return note.json()


@pytest.mark.parametrize(("ttl", "lifetime"), [("session", 1), ("short", 14)])
def test_explicit_memory_options_reach_the_stored_note(
    api_client: TestClient,
    celery_worker: str,
    tokens: dict[str, str],
    user_id: str,
    ttl: str,
    lifetime: int,
) -> None:
    options: dict[str, Any] = {
        "kind": "decision",
        "domain": "travel",
        "visibility": "private",
        "ttl": ttl,
    }
    options |= {"tags": ["trip-planning", "lisbon"], "pinned": True}
    body = _memory(user_id, "We decided to book the Lisbon flights in May.", **options)
    note = _written_note(api_client, tokens, user_id, body)
    assert (note["kind"], note["domain"], note["visibility"]) == ("decision", "travel", "private")
    assert note["pinned"] is True
    assert note["tags"][:2] == ["trip-planning", "lisbon"]
    occurred = datetime.fromisoformat(note["occurred_at"])
    assert datetime.fromisoformat(note["expires_at"]) == occurred + timedelta(days=lifetime)


def test_pipeline_reports_the_tenants_queued_episodes_queue_depth_and_dead_letters(
    api_client: TestClient, idle: None, tokens: dict[str, str], tenant_id: str, user_id: str
) -> None:
    # Another tenant's queued episode and dead letter must not count.
    other = EpisodeInput(
        user_id=user_id, agent_id="main", session_id="s1", role="user", content="x"
    )
    with session_scope() as session:
        [(other_id, _), _] = capture_episodes(
            session=session, tenant_id=f"{tenant_id}-other", episodes=[other, other]
        )
    _dead_letter(other_id)
    headers = bearer(tokens["viewer"])
    before = api_client.get("/v1/pipeline", headers=headers).json()
    assert before["episodes"] == {"queued": 0, "processing": 0, "done": 0, "failed": 0}
    assert before["dead_letters"] == 0
    batch = {"episodes": [_episode(user_id, f"Turn number {i} of three.") for i in range(3)]}
    captured = api_client.post("/v1/episodes", json=batch, headers=bearer(tokens["agent"]))
    assert captured.status_code == 202, captured.text
    queued = api_client.get("/v1/pipeline", headers=headers).json()
    assert queued["episodes"] == {"queued": 3, "processing": 0, "done": 0, "failed": 0}
    assert queued["queues"]["ingest"] == 1  # one process_episodes message for the batch
    assert queued["dead_letters"] == 0
    _dead_letter(uuid.UUID(captured.json()["episode_ids"][0]))
    after = api_client.get("/v1/pipeline", headers=headers).json()
    assert after["dead_letters"] == 1
    assert after["episodes"] == {"queued": 2, "processing": 0, "done": 0, "failed": 1}


def test_forgetting_a_memory_erases_it_and_is_audited_with_actor_and_note_id(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str
) -> None:
    note = new_note(tenant_id, user_id, "My locker code is 4711.")
    note_id = note.id
    with session_scope() as session:
        session.add(note)
        token_id = session.scalar(
            select(ApiToken.id).where(ApiToken.token_hash == hash_token(tokens["operator"]))
        )
    params = {"user_id": user_id, "reason": "asked to forget"}
    response = api_client.delete(
        f"/v1/memories/{note_id}", params=params, headers=bearer(tokens["operator"])
    )
    assert response.status_code == 200, response.text
    assert response.json()["forgotten"] is True and response.json()["versions"] == 1
    assert "locker code is 4711" not in response.text  # ids are hex: a bare 4711 may be one
    with session_scope() as session:
        events = session.scalars(
            select(AuditEvent).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.action == "note.forgotten"
            )
        ).all()
        assert [(e.actor, e.entity_type, e.entity_id, e.user_id, e.reason) for e in events] == [
            (f"token:{token_id}", "note", str(note_id), user_id, "asked to forget")
        ]
        assert session.get(Note, note_id) is None
        stone = session.get(Tombstone, note_id)
        assert stone is not None and stone.actor == f"token:{token_id}"
        assert stone.content_hash is None and "asked to forget" in stone.reason
    again = api_client.delete(
        f"/v1/memories/{note_id}", params=params, headers=bearer(tokens["operator"])
    )
    assert again.status_code == 404


@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/memories"])
@pytest.mark.parametrize(
    ("content", "accepted"),
    [
        ("é" * 500_000, True),  # 500,000 characters, 1,000,000 bytes
        ("é" * 530_000, False),  # 530,000 characters, 1,060,000 bytes
        ("x" * LIMIT, True),
        ("x" * (LIMIT + 1), False),
    ],
    ids=["1MB-accented", "1.06MB-accented", "1MiB-ascii", "1MiB+1-ascii"],
)
def test_the_content_limit_counts_utf8_bytes(
    api_client: TestClient,
    idle: None,
    tokens: dict[str, str],
    user_id: str,
    path: str,
    content: str,
    accepted: bool,
) -> None:
    body = _episode(user_id, content) if path == "/v1/episodes" else _memory(user_id, content)
    response = api_client.post(path, json=body, headers=bearer(tokens["agent"]))
    if accepted:
        assert response.status_code == 202, response.text[:500]
    else:
        _assert_names_field(response, "content")


def test_occurred_at_defaults_to_the_capture_time_for_the_episode_and_its_note(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> None:
    before = datetime.now(UTC)
    response = api_client.post(
        "/v1/episodes",
        json=_episode(user_id, "I started learning the cello."),
        headers=bearer(tokens["agent"]),
    )
    captured = datetime.now(UTC)
    assert response.status_code == 202, response.text
    [episode_id] = response.json()["episode_ids"]
    wait_for_episodes([episode_id], timeout=60)
    with session_scope() as session:
        episode = session.get(Episode, uuid.UUID(episode_id))
        assert episode is not None and episode.status == "done"
        assert before - timedelta(seconds=1) <= episode.occurred_at <= captured
        notes = session.scalars(
            select(Note)
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id == episode.id)
        ).all()
        assert len(notes) == 1
        assert notes[0].occurred_at == episode.occurred_at
        assert before - timedelta(seconds=1) <= notes[0].valid_from <= datetime.now(UTC)
