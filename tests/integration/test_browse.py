"""Browsing for people: GET /v1/memories filters, /v1/users, archive/restore, graph,
activation and provenance; every one access-filtered and role-checked on the server."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from memory.db import session_scope
from memory.ops.models import AuditEvent
from tests.conftest import make_token
from tests.integration.test_transactive import write
from tests.support.helpers import bearer, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture()
def notes(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> dict[str, str]:
    agent = tokens["agent"]
    return {
        "tea": write(api_client, agent, user_id, "chef", "Mira drinks green tea every morning.",
                     kind="preference", domain="food", visibility="open"),
        "loan": write(api_client, agent, user_id, "banker", "Mira's car loan ends in May 2027.",
                      kind="stable", domain="finance", visibility="private"),
        "pin": write(api_client, agent, user_id, "banker", "Mira's bank PIN hint is her cat.",
                     domain="finance", visibility="user-only"),
        "run": write(api_client, agent, user_id, "coach", "Mira runs ten kilometres on Sundays.",
                     kind="episodic", domain="health", visibility="scoped"),
    }  # fmt: skip


def browse(client: TestClient, token: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = client.get("/v1/memories", params=params, headers=bearer(token))
    return response.status_code, response.json()


def ids(body: dict[str, Any]) -> set[str]:
    return {item["id"] for item in body["items"]}


def test_filters_select_exactly_the_matching_notes(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    viewer = tokens["viewer"]
    status, body = browse(api_client, viewer, user_id=user_id)
    assert status == 200, body
    assert ids(body) == set(notes.values()) and body["total"] == 4
    assert all(item["base_level"] is not None and 0 < item["retention"] <= 1
               for item in body["items"])  # fmt: skip
    cases = {
        (("kind", "preference"),): {"tea"},
        (("domain", "finance"),): {"loan", "pin"},
        (("visibility", "user-only"),): {"pin"},
        (("author", "banker"), ("domain", "finance")): {"loan", "pin"},
        (("q", "KILOMETRES"),): {"run"},
        (("q", "100%_"),): set(),
        (("until", "2000-01-01T00:00:00Z"),): set(),
    }
    for filters, expected in cases.items():
        _, body = browse(api_client, viewer, user_id=user_id, **dict(filters))
        assert ids(body) == {notes[k] for k in expected}, filters
        assert body["total"] == len(expected)
    _, first = browse(api_client, viewer, user_id=user_id, limit=3)
    _, second = browse(api_client, viewer, user_id=user_id, limit=3, offset=3)
    assert len(first["items"]) == 3 and len(second["items"]) == 1
    assert ids(first) | ids(second) == set(notes.values()) and second["total"] == 4
    assert browse(api_client, viewer, user_id=user_id, status="bogus")[0] == 422


def test_agent_lists_only_what_it_may_read(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    status, body = browse(api_client, tokens["agent"], user_id=user_id, agent_id="chef")
    assert status == 200, body
    assert ids(body) == {notes["tea"]}  # open only: not private, scoped or user-only
    _, body = browse(api_client, tokens["agent"], user_id=user_id, agent_id="banker")
    assert ids(body) == {notes["tea"], notes["loan"]}  # its own, never user-only
    assert browse(api_client, tokens["agent"], user_id=user_id)[0] == 422  # agent_id required
    other = make_token("viewer", f"t-{uuid.uuid4().hex[:8]}")
    _, body = browse(api_client, other, user_id=user_id)
    assert body["total"] == 0  # another tenant sees nothing of this user


def test_users_lists_the_tenant_users_for_people_only(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    response = api_client.get("/v1/users", headers=bearer(tokens["viewer"]))
    assert response.status_code == 200, response.text
    [entry] = [u for u in response.json()["users"] if u["user_id"] == user_id]
    assert entry["notes"] == 4 and entry["episodes"] == 4
    assert api_client.get("/v1/users", headers=bearer(tokens["agent"])).status_code == 403
    other = make_token("viewer", f"t-{uuid.uuid4().hex[:8]}")
    assert api_client.get("/v1/users", headers=bearer(other)).json()["users"] == []


def _lexicon_docs(tenant_id: str, user_id: str) -> int:
    with session_scope() as session:
        return int(session.execute(text(
            "SELECT doc_count FROM lexicon_totals WHERE tenant_id = :t AND user_id = :u "
            "AND field = 'own'"), {"t": tenant_id, "u": user_id}).scalar_one())  # fmt: skip


def _search_ids(client: TestClient, token: str, user_id: str, query: str) -> set[str]:
    response = client.post(
        "/v1/search", json={"user_id": user_id, "query": query}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    return {r["id"] for r in response.json()["results"]}


def _actions(note_id: str) -> list[tuple[str, str]]:
    with session_scope() as session:
        rows = session.execute(
            select(AuditEvent.action, AuditEvent.actor)
            .where(AuditEvent.entity_id == note_id, AuditEvent.action.like("note.%ed"))
            .order_by(AuditEvent.id)
        )
        return [(a, b) for a, b in rows if a in ("note.archived", "note.restored")]


def test_operator_archives_and_restores_viewer_and_agent_cannot(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str,
    notes: dict[str, str],
) -> None:  # fmt: skip
    tea, params = notes["tea"], {"user_id": user_id}
    for role in ("viewer", "agent"):
        refused = api_client.post(f"/v1/memories/{tea}/archive", params=params,
                                  headers=bearer(tokens[role]))  # fmt: skip
        assert refused.status_code == 403, role
    assert _actions(tea) == [] and tea in _search_ids(api_client, tokens["viewer"], user_id, "tea")
    docs = _lexicon_docs(tenant_id, user_id)
    operator = bearer(tokens["operator"])
    archived = api_client.post(f"/v1/memories/{tea}/archive", params=params, headers=operator)
    assert archived.status_code == 200, archived.text
    assert archived.json()["status"] == "archived" and archived.json()["changed"] is True
    assert _lexicon_docs(tenant_id, user_id) == docs - 1
    assert tea not in _search_ids(api_client, tokens["viewer"], user_id, "green tea morning")
    _, listed = browse(api_client, tokens["viewer"], user_id=user_id, status="archived")
    assert ids(listed) == {tea}
    again = api_client.post(f"/v1/memories/{tea}/archive", params=params, headers=operator)
    assert again.json()["changed"] is False and _lexicon_docs(tenant_id, user_id) == docs - 1
    refused = api_client.post(f"/v1/memories/{tea}/restore", params=params,
                              headers=bearer(tokens["viewer"]))  # fmt: skip
    assert refused.status_code == 403
    restored = api_client.post(f"/v1/memories/{tea}/restore", params=params, headers=operator)
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    assert _lexicon_docs(tenant_id, user_id) == docs
    assert tea in _search_ids(api_client, tokens["viewer"], user_id, "green tea morning")
    actor = f"token:{_token_id(api_client, tokens['operator'])}"
    assert _actions(tea) == [("note.archived", actor), ("note.restored", actor)]


def _token_id(client: TestClient, token: str) -> str:
    return str(client.get("/v1/dashboard/session", headers=bearer(token)).json()["token_id"])


def test_graph_shows_only_visible_neighbours(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    operator = bearer(tokens["operator"])
    for target in ("loan", "pin"):
        response = api_client.post("/v1/links", headers=operator, json={
            "user_id": user_id, "source_id": notes["tea"], "target_id": notes[target]})  # fmt: skip
        assert response.status_code == 201, response.text
    url = f"/v1/memories/{notes['tea']}/graph"
    full = api_client.get(url, params={"user_id": user_id}, headers=bearer(tokens["viewer"]))
    assert full.status_code == 200, full.text
    node_ids = {n["id"] for n in full.json()["nodes"]}
    assert {notes["tea"], notes["loan"], notes["pin"]} <= node_ids
    as_banker = api_client.get(url, params={"user_id": user_id, "agent_id": "banker"},
                               headers=bearer(tokens["agent"])).json()  # fmt: skip
    seen = {n["id"] for n in as_banker["nodes"]}
    assert notes["pin"] not in seen and notes["loan"] in seen
    assert all(e["source"] in seen and e["target"] in seen for e in as_banker["edges"])
    hidden = api_client.get(f"/v1/memories/{notes['pin']}/graph",
                            params={"user_id": user_id, "agent_id": "banker"},
                            headers=bearer(tokens["agent"]))  # fmt: skip
    assert hidden.status_code == 404


def test_activation_and_provenance(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    viewer, params = bearer(tokens["viewer"]), {"user_id": user_id}
    activation = api_client.get(f"/v1/memories/{notes['run']}/activation", params=params,
                                headers=viewer).json()  # fmt: skip
    assert activation["access_count"] >= 1 and activation["curve"]
    assert activation["base_level"] is not None and activation["thresholds"]["prune"] == -2.0
    provenance = api_client.get(f"/v1/memories/{notes['run']}/provenance", params=params,
                                headers=viewer)  # fmt: skip
    assert provenance.status_code == 200, provenance.text
    [episode] = provenance.json()["episodes"]
    assert "ten kilometres" in episode["content"] and episode["agent_id"] == "coach"
    refused = api_client.get(f"/v1/memories/{notes['run']}/provenance",
                             params={**params, "agent_id": "coach"},
                             headers=bearer(tokens["agent"]))  # fmt: skip
    assert refused.status_code == 403


def test_previews_are_dry_runs_that_record_no_access(
    api_client: TestClient, tokens: dict[str, str], user_id: str, notes: dict[str, str]
) -> None:
    viewer, tea = bearer(tokens["viewer"]), notes["tea"]

    def uses() -> int:
        response = api_client.get(
            f"/v1/memories/{tea}", params={"user_id": user_id}, headers=viewer
        )
        return int(response.json()["access_count"])

    before = uses()
    preview = {"user_id": user_id, "dry_run": True}
    searched = api_client.post("/v1/search", json={**preview, "query": "green tea"}, headers=viewer)
    assert tea in {r["id"] for r in searched.json()["results"]}
    context = api_client.post(
        "/v1/context", json={**preview, "prompt": "green tea", "timeout_ms": 5000}, headers=viewer
    )
    assert "green tea" in context.json()["context"]
    real = api_client.post("/v1/search", json={"user_id": user_id, "query": "green tea"},
                           headers=viewer)  # fmt: skip
    assert real.status_code == 200
    wait_until(lambda: uses() > before, timeout=30)
    time.sleep(1.0)
    assert uses() == before + 1  # only the real search counted as a use
