"""GET /v1/events: server-sent events of the user's channel, filtered by visibility."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memory.clients.redis import get_redis
from memory.commons.events import channel_name, publish_events
from tests.conftest import make_token
from tests.support.events import Stream
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def _event(tenant_id: str, user_id: str, name: str, **attributes: str) -> dict[str, Any]:
    return {
        "type": "note.created",
        "tenant_id": tenant_id,
        "user_id": user_id,
        "note_id": name,
        **attributes,
    }


def test_agent_receives_only_events_it_may_see(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str
) -> None:
    api_client.put(
        "/v1/agents/physio", json={"domains": ["health"]}, headers=bearer(tokens["admin"])
    )
    params = {"user_id": user_id, "timeout": 20}
    agent = Stream(tokens["agent"], agent_id="physio", max_events=3, **params)
    agent.start(tenant_id, user_id)
    user = Stream(tokens["viewer"], max_events=7, **params).start(tenant_id, user_id, 2)

    def ev(name: str, **attributes: str) -> dict[str, Any]:
        return _event(tenant_id, user_id, name, **attributes)

    publish_events([
        ev("open", agent_id="chef", visibility="open", domain="food"),
        ev("finance", agent_id="banker", visibility="scoped", domain="finance"),
        ev("private", agent_id="banker", visibility="private", domain="finance"),
        ev("user-only", agent_id="physio", visibility="user-only", domain="health"),
        ev("no-visibility", agent_id="system"),
        {**ev("other-tenant", agent_id="x", visibility="open"), "tenant_id": "elsewhere"},
        ev("health", agent_id="coach", visibility="scoped", domain="health"),
        ev("own-private", agent_id="physio", visibility="private", domain="health"),
        ev("last", agent_id="banker", visibility="private", domain="finance"),
    ])  # fmt: skip
    assert [e["note_id"] for e in agent.events()] == ["open", "health", "own-private"]
    assert [e["note_id"] for e in user.events()] == [
        "open", "finance", "private", "user-only", "no-visibility", "health", "own-private",
    ]  # fmt: skip


def test_stream_ends_on_timeout_with_heartbeats(
    monkeypatch: pytest.MonkeyPatch, tokens: dict[str, str], tenant_id: str, user_id: str
) -> None:
    monkeypatch.setattr("memory.commons.stream.HEARTBEAT_SECONDS", 0.2)
    started = time.monotonic()
    stream = Stream(tokens["viewer"], user_id=user_id, timeout=1.2).start(tenant_id, user_id)
    response = stream.result()
    assert 1.0 <= time.monotonic() - started < 10
    assert response.text.startswith(": connected\n\n")
    assert response.text.count(": heartbeat\n\n") >= 3
    assert (
        dict(get_redis().pubsub_numsub(channel_name(tenant_id, user_id)))[
            channel_name(tenant_id, user_id)
        ]
        == 0
    )  # the subscription is gone once the stream has ended


def test_events_access_rules(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str
) -> None:
    bound = make_token("viewer", tenant_id, "someone-else")
    denied = api_client.get(
        "/v1/events", params={"user_id": user_id, "timeout": 1}, headers=bearer(bound)
    )
    assert denied.status_code == 403
    missing_agent = api_client.get(
        "/v1/events", params={"user_id": user_id, "timeout": 1}, headers=bearer(tokens["agent"])
    )
    assert missing_agent.status_code == 422
    assert api_client.get("/v1/events", params={"user_id": user_id}).status_code == 401


def test_pipeline_and_edits_publish_to_the_stream(
    api_client: TestClient,
    celery_worker: str,
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
) -> None:
    stream = Stream(tokens["agent"], user_id=user_id, agent_id="helper", max_events=2, timeout=40)
    stream.start(tenant_id, user_id)
    body = {
        "user_id": user_id,
        "agent_id": "helper",
        "content": f"Dana's locker code is {uuid.uuid4().int % 10000:04d}.",
        "visibility": "private",
    }
    written = api_client.post("/v1/memories?wait=30", json=body, headers=bearer(tokens["agent"]))
    assert written.status_code == 201, written.text
    [note_id] = written.json()["note_ids"]
    edited = api_client.patch(
        f"/v1/memories/{note_id}",
        json={"user_id": user_id, "agent_id": "helper", "pinned": True},
        headers=bearer(tokens["agent"]),
    )
    assert edited.status_code == 200, edited.text
    events = stream.events()
    assert [(e["type"], e["note_id"]) for e in events] == [
        ("note.created", note_id),
        ("note.updated", note_id),
    ]
    assert events[1]["changed"] == ["pinned"] and events[0]["visibility"] == "private"
