"""L3 transactive memory: the per-user index and "which agent knows about X", leak-free."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from memory.commons.models import TransactiveEntry
from memory.commons.service import refresh_transactive_index
from memory.db import session_scope
from memory.notes.models import Note
from memory.types import utcnow
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def write(
    client: TestClient, token: str, user_id: str, agent_id: str, content: str, **options: object
) -> str:
    body = {"user_id": user_id, "agent_id": agent_id, "content": content, **options}
    response = client.post("/v1/memories?wait=30", json=body, headers=bearer(token))
    assert response.status_code == 201, response.text
    assert response.json()["decision"] == "ADD", response.json()
    return str(response.json()["note_ids"][0])


@pytest.fixture()
def knowledge(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> dict[str, str]:
    """Notes of four agents about money, food and running, with mixed visibility."""
    agent = tokens["agent"]
    finance = {"domain": "finance", "visibility": "private", "tags": ["mortgage", "finance"]}
    ids = {
        "rate": write(api_client, agent, user_id, "banker",
                      "Dana's mortgage rate is fixed at 3.1 percent until 2027.", **finance),
        "refi": write(api_client, agent, user_id, "banker",
                      "Dana refinanced the mortgage with Northbank in March.", **finance),
        "secret": write(api_client, agent, user_id, "banker",
                        "Dana's mortgage account number is 4471-22.",
                        domain="finance", visibility="user-only"),
        "kitchen": write(api_client, agent, user_id, "chef",
                         "Dana wants to pay off the mortgage early to afford a new kitchen.",
                         domain="food", visibility="open", tags=["kitchen", "mortgage"]),
        "marathon": write(api_client, agent, user_id, "coach",
                          "Dana trains for the Berlin marathon every morning.",
                          domain="health", visibility="scoped", tags=["running"]),
    }  # fmt: skip
    admin = bearer(tokens["admin"])
    api_client.put("/v1/agents/auditor", json={"can_see_private": True}, headers=admin)
    api_client.put("/v1/agents/physio", json={"domains": ["health"]}, headers=admin)
    return ids


def search(
    client: TestClient, token: str, user_id: str, query: str, agent_id: str | None = None
) -> list[dict[str, object]]:
    body = {"user_id": user_id, "query": query}
    if agent_id:
        body["agent_id"] = agent_id
    response = client.post("/v1/agents/search", json=body, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()["agents"]


def test_agent_search_counts_only_notes_the_caller_may_see(
    api_client: TestClient, tokens: dict[str, str], user_id: str, knowledge: dict[str, str]
) -> None:
    agent = tokens["agent"]

    def ranking(query: str, agent_id: str | None, token: str = agent) -> list[tuple[str, int]]:
        found = search(api_client, token, user_id, query, agent_id)
        return [(str(a["agent_id"]), int(a["note_count"])) for a in found]  # type: ignore[call-overload]

    # The user (here an operator at user level) sees everything, user-only notes included.
    assert ranking("mortgage", None, tokens["operator"]) == [("banker", 3), ("chef", 1)]
    assert ranking("mortgage", None, tokens["viewer"]) == [("banker", 3), ("chef", 1)]
    # An agent without private access learns nothing about the banker's private notes.
    assert ranking("mortgage", "coach") == [("chef", 1)]
    assert ranking("Northbank refinanced", "coach") == []
    # canSeePrivate shows private notes, never user-only ones; the author sees its own.
    assert ranking("mortgage", "auditor") == [("banker", 2), ("chef", 1)]
    assert ranking("mortgage", "banker") == [("banker", 2), ("chef", 1)]
    # Scoped notes count for agents of that domain (and the author), not for others.
    assert ranking("marathon training", "physio") == [("coach", 1)]
    assert ranking("marathon training", "coach") == [("coach", 1)]
    assert ranking("marathon training", "chef") == []
    # Queries with no content word match nothing.
    assert ranking("what is it about", None, tokens["operator"]) == []

    [banker, _] = search(api_client, tokens["operator"], user_id, "mortgage")
    assert "mortgage" in banker["topics"]  # type: ignore[operator]
    assert banker["score"] > 2.9  # type: ignore[operator]


def test_agent_search_requires_identity(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    no_agent = api_client.post(
        "/v1/agents/search",
        json={"user_id": user_id, "query": "mortgage"},
        headers=bearer(tokens["agent"]),
    )
    assert no_agent.status_code == 422
    no_user = api_client.post(
        "/v1/agents/search", json={"query": "mortgage"}, headers=bearer(tokens["operator"])
    )
    assert no_user.status_code == 422


def test_recent_knowledge_ranks_higher(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> None:
    agent = tokens["agent"]
    old = write(api_client, agent, user_id, "old-baker",
                "Dana bakes sourdough bread every Sunday morning.", visibility="open")  # fmt: skip
    write(api_client, agent, user_id, "new-baker",
          "Dana's sourdough starter is called Bubbles.", visibility="open")  # fmt: skip
    with session_scope() as session:
        session.execute(
            update(Note)
            .where(Note.id == uuid.UUID(old))
            .values(created_at=utcnow() - timedelta(days=365))
        )
    found = search(api_client, agent, user_id, "sourdough", "someone")
    assert [a["agent_id"] for a in found] == ["new-baker", "old-baker"]
    assert found[0]["score"] == pytest.approx(1.0, abs=0.01)
    assert found[1]["score"] == pytest.approx(0.5, abs=0.01)


def _index(tenant_id: str, user_id: str) -> dict[tuple[str, str], TransactiveEntry]:
    with session_scope() as session:
        rows = session.scalars(
            select(TransactiveEntry).where(
                TransactiveEntry.tenant_id == tenant_id, TransactiveEntry.user_id == user_id
            )
        )
        return {(r.agent_id, r.topic): r for r in rows}


def test_refresh_rebuilds_the_index_from_current_notes(
    api_client: TestClient,
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
    knowledge: dict[str, str],
) -> None:
    with session_scope() as session:
        count = refresh_transactive_index(session=session, tenant_id=tenant_id, user_id=user_id)
    index = _index(tenant_id, user_id)
    assert count == len(index) > 0
    # The tag "finance" repeats the domain: each note counts once per topic.
    finance = index[("banker", "finance")]
    assert finance.note_count == 3 and finance.domain == "finance"
    assert finance.visibility == "user-only"  # the most restrictive of its notes
    assert index[("banker", "mortgage")].note_count == 3
    assert index[("chef", "mortgage")].note_count == 1
    assert index[("chef", "mortgage")].visibility == "open"
    assert index[("coach", "running")].domain == "health"

    forgotten = api_client.delete(
        f"/v1/memories/{knowledge['refi']}",
        params={"user_id": user_id},
        headers=bearer(tokens["admin"]),
    )
    assert forgotten.status_code == 200
    for _ in range(2):  # refreshing is idempotent
        with session_scope() as session:
            refresh_transactive_index(session=session, tenant_id=tenant_id, user_id=user_id)
        index = _index(tenant_id, user_id)
        assert index[("banker", "mortgage")].note_count == 2
        assert index[("chef", "mortgage")].note_count == 1
    # Another user's refresh never touches this user's rows.
    with session_scope() as session:
        assert refresh_transactive_index(session=session, tenant_id=tenant_id, user_id="x") == 0
    counts = {key: row.note_count for key, row in index.items()}
    assert {key: row.note_count for key, row in _index(tenant_id, user_id).items()} == counts
