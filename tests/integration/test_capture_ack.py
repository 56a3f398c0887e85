"""A capture is acknowledged once stored; the Celery publish follows the answer."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

from memory.api.routes import episodes as episodes_route
from tests.conftest import make_token

pytestmark = pytest.mark.integration


def _post(app: Any, path: str, token: str, body: dict[str, Any], events: list[Any]) -> None:
    """Drive the ASGI app by hand, recording in `events` when the answer goes out."""
    payload = json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    received = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            events.append(("status", message["status"]))
        if message["type"] == "http.response.body" and not message.get("more_body"):
            events.append("answered")

    asyncio.run(app(scope, receive, send))


def test_the_answer_goes_out_before_the_publish(
    database_url: str, redis_url: str, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.api.app import create_app

    published: list[Any] = []
    events: list[Any] = []  # the answer's and the publish's, in the order they happened

    def publish(episode_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        published.append(list(episode_ids))
        events.append("published")
        return list(episode_ids)

    monkeypatch.setattr(episodes_route, "enqueue_episodes", publish)
    token = make_token("agent", tenant_id)
    episode = {
        "user_id": "u1",
        "agent_id": "main",
        "session_id": "s1",
        "role": "user",
        "content": "the answer first, then the queue",
        "idempotency_key": uuid.uuid4().hex,
    }
    app = create_app()
    _post(app, "/v1/episodes", token, episode, events)
    assert events == [("status", 202), "answered", "published"]
    assert len(published) == 1 and len(published[0]) == 1
    # The same idempotency key again: answered, and nothing new to publish.
    events.clear()
    _post(app, "/v1/episodes", token, episode, events)
    assert events == [("status", 202), "answered"] and len(published) == 1
