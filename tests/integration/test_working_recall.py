"""The working-memory route of /v1/search and /v1/context: a session's L1 items that match
the prompt, over the real API, Redis and pipeline; never another session's or user's."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import make_token
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

PORT_ITEM = "read_file(config.yaml) → the billing database listens on port 6543"
LUNCH_ITEM = "The team ordered pizza for lunch."


def _put(client: TestClient, token: str, user_id: str, session_id: str, *contents: str) -> None:
    items = [{"content": c, "role": "tool"} for c in contents]
    response = client.put(
        f"/v1/sessions/{session_id}/working",
        json={"user_id": user_id, "agent_id": "planner", "items": items},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text


def _context(
    client: TestClient,
    token: str,
    user_id: str,
    session_id: str,
    agent_id: str = "helper",
    prompt: str = "Which port does the billing database use?",
) -> dict[str, Any]:
    # The items are every agent's of the user; the memory made of one is its agent's
    # (visibility "scoped"), so the last test asks as that agent.
    body = {
        "user_id": user_id,
        "agent_id": agent_id,
        "session_id": session_id,
        "prompt": prompt,
        "timeout_ms": 5000,
    }
    response = client.post("/v1/context", json=body, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def test_context_and_search_bring_the_sessions_matching_items(
    api_client: TestClient, tokens: dict[str, str], user_id: str, session_id: str
) -> None:
    agent = tokens["agent"]
    _put(api_client, agent, user_id, session_id, PORT_ITEM, LUNCH_ITEM)
    reply = _context(api_client, agent, user_id, session_id)
    assert [w["content"] for w in reply["working"]] == [PORT_ITEM]
    explanation = reply["working"][0]["explanation"]
    assert explanation["routes"] == {"working": 1}
    assert {"bill", "databas", "port"} <= set(explanation["matched_terms"])
    assert f"- [this session, tool] {PORT_ITEM}" in reply["context"].splitlines()
    assert "pizza" not in reply["context"]
    assert reply["tokens"] <= 1000

    search = api_client.post(
        "/v1/search",
        json={
            "user_id": user_id,
            "agent_id": "helper",
            "query": "port 6543",
            "session_id": session_id,
        },
        headers=bearer(agent),
    )
    assert search.status_code == 200, search.text
    assert [w["content"] for w in search.json()["working"]] == [PORT_ITEM]
    no_session = api_client.post(
        "/v1/search",
        json={"user_id": user_id, "agent_id": "helper", "query": "port 6543"},
        headers=bearer(agent),
    )
    assert no_session.json()["working"] == []


def test_items_never_cross_sessions_users_or_tenants(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str, session_id: str
) -> None:
    agent = tokens["agent"]
    _put(api_client, agent, user_id, session_id, PORT_ITEM)
    other_session = _context(api_client, agent, user_id, f"{session_id}-b")
    assert other_session["working"] == [] and "port 6543" not in other_session["context"]
    # The same session id under another user is that user's own (empty) session.
    other_user = _context(api_client, agent, f"u-{uuid.uuid4().hex[:8]}", session_id)
    assert other_user["working"] == [] and "port 6543" not in other_user["context"]
    # Another tenant's token with the same user and session ids sees nothing.
    foreign = make_token("agent", f"t-{uuid.uuid4().hex[:8]}")
    assert _context(api_client, foreign, user_id, session_id)["working"] == []
    # A token bound to another user is refused before anything is read.
    bound = make_token("agent", tenant_id, f"u-{uuid.uuid4().hex[:8]}")
    body = {"user_id": user_id, "agent_id": "helper", "session_id": session_id, "prompt": "port?"}
    refused = api_client.post("/v1/context", json=body, headers=bearer(bound))
    assert refused.status_code == 403 and "port 6543" not in refused.text


def test_small_talk_gets_no_items_and_the_route_can_be_switched_off(
    api_client: TestClient,
    tokens: dict[str, str],
    user_id: str,
    session_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.config import get_settings

    _put(api_client, tokens["agent"], user_id, session_id, PORT_ITEM)
    _put(api_client, tokens["agent"], user_id, session_id, "Perfect: continue on port 6543.")
    # A go-on gets an empty block, items included, though an item holds its words.
    go_on = _context(api_client, tokens["agent"], user_id, session_id, prompt="Perfect, continue.")
    assert go_on["working"] == [] and go_on["context"] == ""
    monkeypatch.setattr(get_settings().working, "recall_top_k", 0)
    reply = _context(api_client, tokens["agent"], user_id, session_id)
    assert reply["working"] == [] and "port 6543" not in reply["context"]


def test_a_promoted_items_memory_is_not_shown_twice(
    api_client: TestClient,
    tokens: dict[str, str],
    user_id: str,
    session_id: str,
    celery_worker: str,
) -> None:
    agent = tokens["agent"]
    _put(api_client, agent, user_id, session_id, PORT_ITEM)
    promoted = api_client.post(
        f"/v1/sessions/{session_id}/promote",
        json={"user_id": user_id, "agent_id": "planner", "reason": "end"},
        headers=bearer(agent),
    )
    assert promoted.status_code == 200, promoted.text
    wait_for_episodes(promoted.json()["episode_ids"])
    # A tool's result is remembered as a candidate (low trust): approved, it is recalled.
    who = {"user_id": user_id, "agent_id": "planner"}
    waiting = api_client.get("/v1/candidates", params=who, headers=bearer(agent)).json()
    assert [c["origin"] for c in waiting] == ["tool"], waiting
    approve = f"/v1/candidates/{waiting[0]['id']}/approve"
    assert api_client.post(approve, json=who, headers=bearer(agent)).status_code == 200
    # Promotion took the item out of L1: the memory alone answers.
    alone = _context(api_client, agent, user_id, session_id, agent_id="planner")
    assert alone["working"] == [] and len(alone["memories"]) == 1
    assert "6543" in alone["memories"][0]["content"]
    # Put again (a tool returning the same result), the item is shown and its copy is not.
    _put(api_client, agent, user_id, session_id, PORT_ITEM)
    both = _context(api_client, agent, user_id, session_id, agent_id="planner")
    assert [w["content"] for w in both["working"]] == [PORT_ITEM]
    assert both["memories"] == [] and both["context"].count("6543") == 1


def test_muma_search_lists_the_sessions_matching_items(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str, session_id: str
) -> None:
    from click.testing import CliRunner

    from memory.cli.main import cli

    _put(api_client, tokens["agent"], user_id, session_id, PORT_ITEM, LUNCH_ITEM)
    # The user must be known to the CLI: one memory of theirs.
    write = {"user_id": user_id, "agent_id": "planner", "content": "Alice likes tea."}
    assert api_client.post("/v1/memories", json=write, headers=bearer(tokens["agent"])).is_success
    ask = ["search", "--user", user_id, "--tenant", tenant_id, "--session", session_id]
    shown = CliRunner().invoke(cli, [*ask, "billing database port"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert f"working memory of session {session_id}" in shown.output
    assert "port 6543" in shown.output and "pizza" not in shown.output
    as_json = CliRunner().invoke(cli, [*ask, "--json", "billing database port"])
    assert [w["content"] for w in json.loads(as_json.output)["working"]] == [PORT_ITEM]
    none = CliRunner().invoke(cli, [*ask, "weather forecast"])
    assert f"no working-memory item of session {session_id} matched" in none.output
