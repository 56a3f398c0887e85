"""An explicit write (POST /v1/memories, the plugin's memory_write) is stored as given:
its content (not filtered, not rewritten, not split), kind and options, never merged
into a captured turn that says the same; with `?wait` the answer carries its id."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration


def _write(client: TestClient, token: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/memories?wait=20", json=body, headers=bearer(token))
    assert response.status_code == 201, response.text
    return response.json()


def test_the_write_is_stored_as_given_and_answered_with_its_id(
    api_client: TestClient, tokens: dict[str, str], user_id: str, celery_worker: str
) -> None:
    agent = tokens["agent"]
    said = "ok so please remember that My locker code is 7319."
    turn = {"user_id": user_id, "agent_id": "main", "session_id": "s1", "role": "user",
            "speaker": "Dana", "content": said}  # fmt: skip
    captured = api_client.post("/v1/episodes", json=turn, headers=bearer(agent))
    wait_for_episodes(captured.json()["episode_ids"])
    content = "Ok. My locker code is 7319, and I keep it to myself."
    answer = _write(api_client, agent, {"user_id": user_id, "agent_id": "main",
                                        "content": content, "kind": "preference",
                                        "tags": ["gym"], "speaker": "Dana"})  # fmt: skip
    assert answer["decision"] == "ADD" and len(answer["note_ids"]) == 1
    who = {"user_id": user_id, "agent_id": "main"}
    path = f"/v1/memories/{answer['note_ids'][0]}"
    note = api_client.get(path, params=who, headers=bearer(agent))
    assert note.status_code == 200, note.text
    stored = note.json()
    # Not filtered ("Ok."), not rewritten ("Dana's locker code"), not merged, kind kept.
    assert stored["content"] == content
    assert stored["kind"] == "preference" and "gym" in stored["tags"]
    assert stored["origin"] == "agent"
    listed = api_client.get("/v1/memories", params={**who, "q": "locker"}, headers=bearer(agent))
    contents = {item["content"] for item in listed.json()["items"]}
    assert content in contents and len(contents) == 2  # the captured turn stays its own
