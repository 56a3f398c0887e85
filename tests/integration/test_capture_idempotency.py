"""An idempotency key sent by several requests at the same moment still makes one episode:
each concurrent capture (its own transaction on the real PostgreSQL) gets the same id, and
exactly one of them reports it as new, so only that one publishes it to the pipeline."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes

pytestmark = pytest.mark.integration

CONCURRENT = 8


def test_concurrent_captures_with_one_key_store_one_episode_reported_new_once(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    key = f"turn-{uuid.uuid4().hex}"
    start = threading.Barrier(CONCURRENT)

    def capture(index: int) -> tuple[uuid.UUID, bool]:
        episode = EpisodeInput(
            user_id=user_id,
            agent_id="a1",
            session_id="s1",
            role="user",
            content=f"I booked the flight to Oslo. (retry {index})",
            idempotency_key=key,
        )
        with session_scope() as session:
            start.wait(timeout=30)  # every transaction open before any inserts
            [result] = capture_episodes(session=session, tenant_id=tenant_id, episodes=[episode])
            return result

    with ThreadPoolExecutor(CONCURRENT) as pool:
        results = list(pool.map(capture, range(CONCURRENT)))

    assert len({episode_id for episode_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    with session_scope() as session:
        stored = session.scalar(
            select(func.count()).select_from(Episode).where(Episode.idempotency_key == key)
        )
    assert stored == 1
