"""Durability with real processes: Redis down at capture time, a worker SIGKILLed mid-task."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.ops.models import AuditEvent
from tests.conftest import make_token
from tests.support.helpers import episodes_settled, wait_for_episodes, wait_until
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture()
def stack(tmp_path: Path, database_url: str) -> Iterator[Stack]:
    stack = Stack(
        tmp_path / "stack",
        database_url,
        MUMA_PIPELINE__STUCK_AFTER_SECONDS="3",
        MUMA_EMBEDDING__THREADS="1",
    )
    stack.start_redis()
    stack.start_api()
    stack.start_worker()
    stack.start_beat()
    try:
        yield stack
    finally:
        stack.stop_all()


def _turns(user_id: str, n: int, tag: str) -> dict[str, object]:
    return {
        "episodes": [
            {
                "user_id": user_id,
                "agent_id": "a1",
                "session_id": f"s-{tag}",
                "role": "user",
                "speaker": "Alice",
                "content": f"Note {tag}-{i}: I visited museum number {i} in city {tag}.",
            }
            for i in range(n)
        ]
    }


def _post(stack: Stack, token: str, body: dict[str, object]) -> tuple[list[str], float]:
    started = time.perf_counter()
    response = httpx.post(
        f"{stack.api_url}/v1/episodes",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 202, response.text
    return response.json()["episode_ids"], elapsed


def _no_duplicates(episode_ids: list[str]) -> None:
    ids = [uuid.UUID(i) for i in episode_ids]
    with session_scope() as session:
        statuses = dict(
            session.execute(select(Episode.id, Episode.status).where(Episode.id.in_(ids))).all()
        )
        per_episode = dict(
            session.execute(
                select(NoteSource.episode_id, func.count())
                .where(NoteSource.episode_id.in_(ids))
                .group_by(NoteSource.episode_id)
            ).all()
        )
        pending = session.scalar(
            select(func.count())
            .select_from(Note)
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id.in_(ids), Note.status == "pending")
        )
    assert set(statuses.values()) == {"done"}, statuses
    assert all(per_episode.get(i) == 1 for i in ids), per_episode
    assert pending == 0
    _no_episode_merged_into_itself(ids)


def _no_episode_merged_into_itself(episode_ids: list[uuid.UUID]) -> None:
    """A duplicate extraction that dedup merged away leaves no extra source (the merge
    keeps one per episode), but it leaves a reinforcement: every note must have been
    reinforced exactly once per source episode beyond its first."""
    with session_scope() as session:
        sources = dict(
            session.execute(
                select(NoteSource.note_id, func.count(NoteSource.episode_id.distinct()))
                .where(NoteSource.episode_id.in_(episode_ids))
                .group_by(NoteSource.note_id)
            ).all()
        )
        reinforced = dict(
            session.execute(
                select(AuditEvent.entity_id, func.count())
                .where(
                    AuditEvent.action == "note.reinforced",
                    AuditEvent.entity_id.in_([str(n) for n in sources]),
                )
                .group_by(AuditEvent.entity_id)
            ).all()
        )
    for note_id, count in sources.items():
        assert reinforced.get(str(note_id), 0) == count - 1, (note_id, count, reinforced)


def test_capture_survives_redis_outage(stack: Stack, tenant_id: str) -> None:
    user_id = f"u-{uuid.uuid4().hex[:8]}"
    token = make_token("agent", tenant_id)
    ids, _ = _post(stack, token, _turns(user_id, 3, "before"))
    wait_for_episodes(ids, timeout=60)

    stack.stop("redis")
    down_ids, elapsed = _post(stack, token, _turns(user_id, 5, "down"))
    assert elapsed < 10, f"capture took {elapsed:.1f}s with Redis down"
    with session_scope() as session:
        stored = session.scalars(
            select(Episode.status).where(Episode.id.in_([uuid.UUID(i) for i in down_ids]))
        )
        assert sorted(stored) == ["queued"] * 5

    stack.start_redis()  # same port: workers and beat reconnect; the sweep republishes

    def settled_under_supervision() -> bool:
        # Production supervises workers (`muma up`, compose restart policies). kombu can
        # crash a worker that lost its broker while it shuts down (seconds after Redis
        # stopped), so it is revived whenever found dead, not checked once.
        stack.revive_worker()
        return episodes_settled(down_ids)

    wait_until(settled_under_supervision, timeout=120)
    _no_duplicates(ids + down_ids)


def test_worker_killed_mid_task_loses_and_duplicates_nothing(stack: Stack, tenant_id: str) -> None:
    user_id = f"u-{uuid.uuid4().hex[:8]}"
    token = make_token("agent", tenant_id)
    ids, _ = _post(stack, token, _turns(user_id, 60, "kill"))
    episode_ids = [uuid.UUID(i) for i in ids]

    def done() -> int:
        with session_scope() as session:
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(Episode)
                    .where(Episode.id.in_(episode_ids), Episode.status == "done")
                )
                or 0
            )

    def extracted() -> int:
        with session_scope() as session:
            return int(
                session.scalar(
                    select(func.count()).select_from(Note).where(Note.user_id == user_id)
                )
                or 0
            )

    # Kill once the first notes exist: a decide batch finishes all its episodes in one
    # commit, so waiting for a few to be done would often wait for all of them.
    deadline = time.monotonic() + 60
    while extracted() < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    stack.stop("worker", sig=signal.SIGKILL)
    assert done() < len(ids), "the worker finished everything before it could be killed"
    stack.start_worker("worker2")
    wait_for_episodes(ids, timeout=180)
    _no_duplicates(ids)
