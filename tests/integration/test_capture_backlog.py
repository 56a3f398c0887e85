"""Under a backlog the workers cannot absorb, captures are refused with 429 and a
Retry-After, nothing of the refused request is stored, and /v1/pipeline and /metrics
report the backlog.

The backlog is service-wide: the test holds its own waiting episodes locked (FOR UPDATE)
while it runs, so no worker takes them (workers claim with SKIP LOCKED) and the count
cannot fall below them, whatever other tests left queued.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select

from memory.config import reset_settings_cache
from memory.db import session_scope
from memory.episodes.backlog import forget_measured_backlog
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration

HELD = 3


def _limit(value: int) -> None:
    os.environ["MUMA_PIPELINE__MAX_BACKLOG"] = str(value)
    reset_settings_cache()
    forget_measured_backlog()


@pytest.fixture()
def held_backlog(tenant_id: str) -> Iterator[None]:
    """HELD waiting episodes of a user of this tenant, locked until the test ends."""
    turns = [
        EpisodeInput(user_id="waiting", agent_id="main", session_id="s", role="user",
                     content=f"waiting turn {i}")
        for i in range(HELD)
    ]  # fmt: skip
    with session_scope() as session:
        ids = [i for i, _ in capture_episodes(session=session, tenant_id=tenant_id, episodes=turns)]
    saved = os.environ.get("MUMA_PIPELINE__MAX_BACKLOG")
    with session_scope() as holder:
        holder.execute(select(Episode.id).where(Episode.id.in_(ids)).with_for_update())
        try:
            yield
        finally:
            holder.execute(delete(Episode).where(Episode.id.in_(ids)))
            os.environ["MUMA_PIPELINE__MAX_BACKLOG"] = saved or "0"
            reset_settings_cache()
            forget_measured_backlog()


def _stored(tenant_id: str, user_id: str) -> int:
    with session_scope() as session:
        return (
            session.scalar(
                select(func.count()).where(
                    Episode.tenant_id == tenant_id, Episode.user_id == user_id
                )
            )
            or 0
        )


def test_a_full_backlog_refuses_captures_with_429_and_stores_nothing(
    held_backlog: None, api_client: TestClient, tokens: dict[str, str], tenant_id: str,
    user_id: str,
) -> None:  # fmt: skip
    agent, operator = bearer(tokens["agent"]), bearer(tokens["operator"])
    turn = {"user_id": user_id, "agent_id": "main", "session_id": "s", "role": "user",
            "content": "My sister lives in Porto."}  # fmt: skip

    _limit(HELD)
    refused = api_client.post("/v1/episodes", json={"episodes": [turn, turn]}, headers=agent)
    assert refused.status_code == 429, refused.text
    assert 1 <= int(refused.headers["Retry-After"]) <= 30
    body = refused.json()
    assert body["error"] == "OverloadedError" and "pipeline.max_backlog" in body["detail"]
    assert body["retry_after_seconds"] == int(refused.headers["Retry-After"])
    explicit = {"user_id": user_id, "agent_id": "main", "content": "I like green tea."}
    assert api_client.post("/v1/memories", json=explicit, headers=agent).status_code == 429
    assert _stored(tenant_id, user_id) == 0

    backlog = api_client.get("/v1/pipeline", headers=operator).json()["backlog"]
    assert backlog["full"] is True and backlog["limit"] == HELD and backlog["queued"] >= HELD
    metrics = api_client.get("/metrics", headers=operator).text
    assert f"muma_capture_backlog_limit {float(HELD)}" in metrics

    _limit(1_000_000)
    accepted = api_client.post("/v1/episodes", json=turn, headers=agent)
    assert accepted.status_code == 202, accepted.text
    assert _stored(tenant_id, user_id) == 1
    backlog = api_client.get("/v1/pipeline", headers=operator).json()["backlog"]
    assert backlog["full"] is False


def test_a_user_bound_token_sees_no_service_wide_backlog(
    api_client: TestClient, tenant_id: str, user_id: str
) -> None:
    from tests.conftest import make_token

    bound = bearer(make_token("operator", tenant_id, user_id))
    answer = api_client.get("/v1/pipeline", headers=bound).json()
    assert "backlog" not in answer and answer["queues"] == {}
