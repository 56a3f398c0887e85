"""Reading GET /v1/events (server-sent events) in tests."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
from fastapi.testclient import TestClient

from memory.api.app import create_app
from memory.clients.redis import get_redis
from memory.commons.events import channel_name
from tests.support.helpers import bearer, wait_until


class Stream:
    """GET /v1/events in a thread (the test client returns a stream once it has ended)."""

    def __init__(self, token: str, **params: Any) -> None:
        self.response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, args=(token, params), daemon=True)

    def _run(self, token: str, params: dict[str, Any]) -> None:
        client = TestClient(create_app())
        self.response = client.get("/v1/events", params=params, headers=bearer(token))

    def start(self, tenant_id: str, user_id: str, subscribers: int = 1) -> Stream:
        self._thread.start()
        channel = channel_name(tenant_id, user_id)

        def subscribed() -> bool:
            return dict(get_redis().pubsub_numsub(channel)).get(channel, 0) >= subscribers

        wait_until(subscribed, timeout=15)
        return self

    def result(self, timeout: float = 40) -> httpx.Response:
        self._thread.join(timeout)
        assert self.response is not None, "the stream did not end"
        return self.response

    def events(self) -> list[dict[str, Any]]:
        response = self.result()
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = [f for f in response.text.split("\n\n") if f.strip()]
        out = []
        for frame in frames:
            lines = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
            if "data" in lines:
                event = json.loads(lines["data"])
                assert lines["event"] == event["type"]
                out.append(event)
        return out
