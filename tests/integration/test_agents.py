"""`muma agents` (CLI over the real database) and the /v1/agents API, with their audit."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.access.policy import agent_viewer
from memory.cli.main import cli
from memory.config import get_settings
from memory.db import session_scope
from memory.ops.models import AuditEvent
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def _agents(client: TestClient, token: str) -> dict[str, dict[str, object]]:
    response = client.get("/v1/agents", headers=bearer(token))
    assert response.status_code == 200, response.text
    return {a["agent_id"]: a for a in response.json()["agents"]}


def test_cli_add_list_update_is_audited_and_served(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str
) -> None:
    out = _run(
        "agents", "add", "coach", "--tenant", tenant_id,
        "--domains", "health, fitness,health", "--name", "Health coach",
    )  # fmt: skip
    assert "added agent coach" in out
    _run("agents", "add", "banker", "--tenant", tenant_id, "--domains", "finance",
         "--can-see-private")  # fmt: skip
    listed = _run("agents", "list", "--tenant", tenant_id)
    assert "coach" in listed and "Health coach" in listed and "banker" in listed

    _run("agents", "update", "coach", "--tenant", tenant_id, "--domains", "health",
         "--can-see-private")  # fmt: skip
    # Options not given stay as they are.
    _run("agents", "update", "coach", "--tenant", tenant_id, "--name", "Coach")

    for role in ("agent", "viewer", "operator", "admin"):
        agents = _agents(api_client, tokens[role])
        assert agents["coach"] == {
            "agent_id": "coach",
            "display_name": "Coach",
            "domains": ["health"],
            "can_see_private": True,
            "source": "database",
        }
        assert agents["banker"]["domains"] == ["finance"]

    with session_scope() as session:
        events = list(
            session.scalars(
                select(AuditEvent)
                .where(AuditEvent.tenant_id == tenant_id, AuditEvent.entity_type == "agent")
                .order_by(AuditEvent.id)
            )
        )
        viewer = agent_viewer(
            session=session, settings=get_settings(), tenant_id=tenant_id, user_id="u",
            agent_id="coach",
        )  # fmt: skip
    assert [(e.action, e.entity_id) for e in events] == [
        ("agent.created", "coach"),
        ("agent.created", "banker"),
        ("agent.updated", "coach"),
        ("agent.updated", "coach"),
    ]
    assert events[0].data["new"]["domains"] == ["fitness", "health"]
    assert events[2].data["old"]["domains"] == ["fitness", "health"]
    assert events[2].data["new"] == {
        "display_name": "Health coach",
        "domains": ["health"],
        "can_see_private": True,
    }
    assert viewer.domains == frozenset({"health"}) and viewer.can_see_private


def test_cli_update_of_unknown_agent_fails(database_url: str, tenant_id: str) -> None:
    result = CliRunner().invoke(
        cli,
        ["agents", "update", "ghost", "--tenant", tenant_id, "--domains", "x"],
    )
    assert result.exit_code != 0
    assert "ghost" in str(result.exception)


def test_put_agent_is_admin_only(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str
) -> None:
    body = {"domains": ["travel"], "display_name": "Trip planner"}
    for role in ("agent", "viewer", "operator"):
        denied = api_client.put("/v1/agents/planner", json=body, headers=bearer(tokens[role]))
        assert denied.status_code == 403, role
    created = api_client.put("/v1/agents/planner", json=body, headers=bearer(tokens["admin"]))
    assert created.status_code == 200, created.text
    assert created.json()["domains"] == ["travel"] and not created.json()["can_see_private"]
    changed = api_client.put(
        "/v1/agents/planner", json={"can_see_private": True}, headers=bearer(tokens["admin"])
    )
    assert changed.json() == {
        "agent_id": "planner",
        "display_name": "Trip planner",
        "domains": ["travel"],
        "can_see_private": True,
        "source": "database",
    }
    with session_scope() as session:
        actors = list(
            session.scalars(
                select(AuditEvent.actor).where(
                    AuditEvent.tenant_id == tenant_id, AuditEvent.entity_id == "planner"
                )
            )
        )
    assert len(actors) == 2 and all(a.startswith("token:") for a in actors)
    bad = api_client.put(
        "/v1/agents/planner", json={"domains": ["x" * 65]}, headers=bearer(tokens["admin"])
    )
    assert bad.status_code == 422


def test_agents_are_per_tenant(api_client: TestClient, tokens: dict[str, str]) -> None:
    from tests.conftest import make_token

    api_client.put("/v1/agents/solo", json={"domains": ["a"]}, headers=bearer(tokens["admin"]))
    other = make_token("viewer", "t-elsewhere")
    assert "solo" not in _agents(api_client, other)
