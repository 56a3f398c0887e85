"""Sleep-cycle tasks on a real Celery worker: POST /v1/consolidate and the beat fan-outs."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.clients.embedder import get_embedder
from memory.config import load_settings
from memory.conflicts.models import Conflict
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.ops.models import AuditEvent
from memory.types import utcnow
from tests.conftest import make_token
from tests.integration.sleep_notes import make_note
from tests.support.helpers import bearer, wait_for_workers_idle, wait_until
from tests.unit.sleep.topics import PAIRS, TOPICS

pytestmark = pytest.mark.integration


def seed_with_episodes(tenant_id: str, user_id: str, texts: list[str], age_days: float) -> None:
    """Notes `age_days` old, each with the episode it came from."""
    settings = load_settings()
    created = utcnow() - timedelta(days=age_days)
    vectors = get_embedder().embed(texts)
    with session_scope() as session:
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            episode = Episode(
                tenant_id=tenant_id,
                user_id=user_id,
                agent_id=f"agent-{i % 2}",
                session_id="s1",
                role="user",
                content=text,
                status="done",
                occurred_at=created,
            )
            session.add(episode)
            session.flush()
            note = make_note(
                session,
                tenant_id=tenant_id,
                user_id=user_id,
                content=text,
                created_at=created,
                settings=settings,
                embedding=vector,
                agent_id=episode.agent_id,
            )
            session.add(NoteSource(note_id=note.id, episode_id=episode.id))


def cycles(tenant_id: str) -> int:
    with session_scope() as session:
        count = session.scalar(
            select(func.count()).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.action == "sleep.cycle"
            )
        )
    return int(count or 0)


def test_post_consolidate_runs_a_sleep_cycle_on_the_worker(
    api_client: TestClient,
    celery_worker: str,
    tenant_id: str,
    user_id: str,
    tokens: dict[str, str],
) -> None:
    texts = TOPICS["running"] + TOPICS["guitar"] + [PAIRS[0][0], PAIRS[0][1]]
    seed_with_episodes(tenant_id, user_id, texts, age_days=0.5)
    body = {"user_id": user_id}
    denied = api_client.post("/v1/consolidate", json=body, headers=bearer(tokens["viewer"]))
    assert denied.status_code == 403
    bound = make_token("agent", tenant_id, user=f"{user_id}-other")
    assert api_client.post("/v1/consolidate", json=body, headers=bearer(bound)).status_code == 403
    missing = api_client.post(
        "/v1/consolidate", json={"user_id": "nobody"}, headers=bearer(tokens["admin"])
    )
    assert missing.status_code == 404
    for number, role in enumerate(("operator", "agent"), start=1):
        response = api_client.post("/v1/consolidate", json=body, headers=bearer(tokens[role]))
        assert response.status_code == 202, response.text
        assert uuid.UUID(response.json()["task_id"])
        wait_until(lambda n=number: cycles(tenant_id) == n, timeout=120)
    with session_scope() as session:
        knowledge = session.scalars(
            select(Note).where(
                Note.user_id == user_id, Note.kind == "knowledge", Note.valid_to.is_(None)
            )
        ).all()
        assert len(knowledge) >= 2
        versions = session.scalar(
            select(func.count()).where(Note.user_id == user_id, Note.kind == "knowledge")
        )
        assert versions == len(knowledge)  # the second cycle changed and duplicated nothing
        cited = session.scalars(
            select(NoteSource.relation).where(NoteSource.note_id == knowledge[0].id)
        ).all()
        assert cited and set(cited) == {"consolidated"}
        [conflict] = session.scalars(
            select(Conflict).where(
                Conflict.user_id == user_id, Conflict.classification == "contradictory"
            )
        ).all()
    listed = api_client.get(
        "/v1/conflicts",
        params={"user_id": user_id, "classification": "contradictory"},
        headers=bearer(tokens["viewer"]),
    )
    [shown] = listed.json()
    assert (
        shown["id"] == str(conflict.id) and "Paris" in shown["a"]["content"] + shown["b"]["content"]
    )


def test_beat_decay_fan_out_sends_one_task_per_user(
    celery_worker: str, tenant_id: str, user_id: str
) -> None:
    from tasks.sleep import decay_all_users

    wait_for_workers_idle()
    second = f"{user_id}-2"
    seed_with_episodes(tenant_id, user_id, ["Gina fed the neighbour's cat."], age_days=10)
    seed_with_episodes(tenant_id, second, ["Gina's nephew visited."], age_days=10)
    seed_with_episodes(tenant_id, second, ["Gina booked a table."], age_days=0)
    started = time.time()
    decay_all_users.apply_async()

    def statuses() -> list[str]:
        with session_scope() as session:
            query = select(Note.status).where(Note.tenant_id == tenant_id, Note.kind == "episodic")
            return sorted(session.scalars(query).all())

    wait_until(lambda: statuses() == ["active", "archived", "archived"], timeout=120)
    wait_for_workers_idle()
    with session_scope() as session:
        runs = session.scalars(
            select(AuditEvent.user_id).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.action == "note.archived"
            )
        ).all()
    assert sorted(runs) == sorted([user_id, second])
    assert time.time() - started < 120


def test_idle_l1_sessions_are_promoted_before_they_expire(
    celery_worker: str, redis_url: str, tenant_id: str, user_id: str
) -> None:
    from memory.clients.redis import get_redis
    from memory.config import WorkingSettings
    from memory.working.service import ItemInput, put_items, session_key
    from tasks.sleep import promote_idle_sessions

    client = get_redis()
    idle, busy = "chat:1", "chat:2"  # ':' in ids: keys are escaped and parsed back
    for session_id, ttl in ((idle, 600), (busy, 86400)):
        put_items(
            client=client,
            tenant_id=tenant_id,
            user_id=user_id,
            session_id=session_id,
            agent_id="agent-1",
            settings=WorkingSettings(ttl_seconds=ttl),
            items=[ItemInput(content=f"Hana is planning a trip ({session_id}).")],
        )
    promote_idle_sessions.apply_async()

    def promoted() -> list[str]:
        with session_scope() as session:
            query = select(Episode.session_id).where(
                Episode.tenant_id == tenant_id, Episode.source == "promotion"
            )
            return list(session.scalars(query))

    wait_until(lambda: promoted() == [idle], timeout=60)
    wait_until(lambda: not client.exists(session_key(tenant_id, user_id, idle)), timeout=30)
    assert client.exists(session_key(tenant_id, user_id, busy))
    wait_for_workers_idle()
