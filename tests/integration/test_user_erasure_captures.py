"""Captures in flight while a user is erased: refused (409 naming the user) and nothing
stored, by the capture statement itself; an episode already queued in the broker is not
brought back when its task runs after the erasure; once it is done, the user id starts a
new, empty user."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.clients.broker import PRIORITY_SUFFIXES
from memory.config import load_settings
from memory.db import session_scope
from memory.episodes import service as episode_service
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.erasure.guard import BeingErasedError
from memory.erasure.runner import run_erasure
from memory.erasure.users import start_erasure
from memory.ops.models import DeadLetter
from tasks.app import create_celery_app
from tests.conftest import (
    make_token,
    start_worker,
    stop_process_group,
    wait_for_worker,
    worker_broker_url,
    worker_env,
)
from tests.integration.test_user_erasure_support import bulk_user, counts, marker
from tests.support.helpers import bearer, wait_until

pytestmark = pytest.mark.integration


def _start(tenant_id: str, user_id: str) -> uuid.UUID:
    with session_scope() as session:
        erasure, _ = start_erasure(
            session=session, tenant_id=tenant_id, user_id=user_id, requested_by="test"
        )
        return erasure.id


def _turn(user_id: str, content: str = "a turn") -> dict[str, Any]:
    return {
        "user_id": user_id,
        "agent_id": "main",
        "session_id": "s-capture",
        "role": "user",
        "content": content,
    }


def _episodes(tenant_id: str, user_id: str) -> int:
    return counts(tenant_id, user_id)["episodes"]


def test_captures_for_a_user_being_erased_are_refused_and_nothing_is_stored(
    api_client: TestClient, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    bulk_user(tenant_id, alice, 5, marker("c"))
    agent = make_token("agent", tenant_id)
    erasure_id = _start(tenant_id, alice)

    refused = api_client.post("/v1/episodes", json=_turn(alice), headers=bearer(agent))
    assert refused.status_code == 409, refused.text
    assert refused.json()["user_id"] == alice
    assert refused.json()["erasure_id"] == str(erasure_id)
    explicit = {"user_id": alice, "agent_id": "main", "content": "a fact"}
    assert api_client.post("/v1/memories", json=explicit, headers=bearer(agent)).status_code == 409
    keyed = {**_turn(alice), "idempotency_key": f"k-{uuid.uuid4().hex}"}
    assert api_client.post("/v1/episodes", json=keyed, headers=bearer(agent)).status_code == 409
    # A batch naming her stores nothing, not even the other user's turns.
    batch = {"episodes": [_turn(bob), _turn(alice)]}
    answer = api_client.post("/v1/episodes", json=batch, headers=bearer(agent))
    assert answer.status_code == 409 and answer.json()["user_id"] == alice
    assert _episodes(tenant_id, alice) == 5 and _episodes(tenant_id, bob) == 0
    # Bob alone is not held up.
    assert (
        api_client.post("/v1/episodes", json=_turn(bob), headers=bearer(agent)).status_code == 202
    )

    # The statement itself refuses (not a check before it): with the 409 taken away, the
    # capture of a new turn still stores nothing.
    monkeypatch.setattr(episode_service, "refuse_if_being_erased", lambda **_: None)
    with session_scope() as session:
        [(_, created)] = capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[EpisodeInput(alice, "main", "s-capture", "user", "slipped in?")],
        )
    assert created is False
    monkeypatch.undo()
    with pytest.raises(BeingErasedError), session_scope() as session:
        capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[EpisodeInput(alice, "main", "s-capture", "user", "slipped in?")],
        )
    assert _episodes(tenant_id, alice) == 5

    assert run_erasure(erasure_id).status == "done"
    assert not any(counts(tenant_id, alice).values())
    # Afterwards the id starts a new user: nothing of the old one comes with it.
    fresh = api_client.post("/v1/episodes", json=_turn(alice, "hello"), headers=bearer(agent))
    assert fresh.status_code == 202, fresh.text
    assert _episodes(tenant_id, alice) == 1 and counts(tenant_id, alice)["notes"] == 0


def _queue_empty(client: redis.Redis) -> bool:
    return not any(client.llen("ingest" + suffix) for suffix in PRIORITY_SUFFIXES)


def test_an_episode_queued_before_the_erasure_is_not_brought_back(
    database_url: str, redis_url: str, tenant_id: str
) -> None:
    """Its task waits in a broker no worker reads until the erasure is done; then a worker
    takes it and finds nothing to work on."""
    broker = worker_broker_url(redis_url)
    producer = create_celery_app(load_settings(redis_url=broker))
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    word = marker("q")
    with session_scope() as session:
        results = capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[
                EpisodeInput(alice, "main", "s-q", "user", f"My dog {word} likes the beach.")
            ],
        )
    episode_ids = [str(episode_id) for episode_id, _ in results]
    producer.send_task(
        "tasks.pipeline.process_episodes",
        (episode_ids,),
        {"queued_at": time.time()},
        queue="ingest",
    )
    client = redis.Redis.from_url(broker)
    assert not _queue_empty(client)

    assert run_erasure(_start(tenant_id, alice)).status == "done"
    name = f"queued-{uuid.uuid4().hex[:6]}"
    env = worker_env(MUMA_DATABASE_URL=database_url, MUMA_REDIS_URL=broker)
    worker = start_worker(env, name=name, concurrency=1)
    try:
        wait_for_worker(name, app=producer)
        wait_until(lambda: _queue_empty(client), timeout=60)
        wait_until(lambda: _ran(producer, "tasks.pipeline.process_episodes"), timeout=60)
    finally:
        stop_process_group(worker)
    assert not any(counts(tenant_id, alice).values())
    with session_scope() as session:
        letters = session.scalar(
            select(func.count())
            .select_from(DeadLetter)
            .where(DeadLetter.episode_id.in_([uuid.UUID(i) for i in episode_ids]))
        )
    assert letters == 0


def _ran(app: Any, task: str) -> bool:
    """Whether a worker of `app` has run `task` and holds nothing any more."""
    inspect = app.control.inspect(timeout=1.0)
    stats = inspect.stats() or {}
    done = any(s.get("total", {}).get(task) for s in stats.values())
    busy = any((inspect.active() or {}).values()) or any((inspect.reserved() or {}).values())
    return done and not busy


def test_a_capture_that_started_before_the_erasure_is_waited_for_and_removed(
    tenant_id: str, database_url: str
) -> None:
    """The race at the start: a capture whose snapshot was taken before the erasure's row
    was committed does not see it and stores its turn. The erasure waits for that
    transaction before its last pass, then removes what it stored."""
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    bulk_user(tenant_id, alice, 3, marker("r"))
    with session_scope() as racing:
        # REPEATABLE READ keeps the snapshot taken here for the capture below, as a
        # statement started just before the erasure's commit would have it.
        racing.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        racing.execute(select(1))
        erasure_id = _start(tenant_id, alice)
        waiting = run_erasure(erasure_id, budget_seconds=1.0)
        assert waiting.status == "waiting", waiting
        assert "transaction" in waiting.progress["detail"]
        [(_, created)] = capture_episodes(
            session=racing,
            tenant_id=tenant_id,
            episodes=[EpisodeInput(alice, "main", "s-race", "user", "slipped in")],
        )
        assert created  # it did not see the erasure
    assert _episodes(tenant_id, alice) == 1
    done = run_erasure(erasure_id)
    assert done.status == "done" and done.report is not None
    assert done.report["passes"] == 2 and done.report["removed"]["episodes"] == 4
    assert not any(counts(tenant_id, alice).values())
