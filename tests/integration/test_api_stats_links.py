"""GET /v1/stats and POST /v1/links for the OpenClaw plugin: roles and visibility."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.cli.main import cli
from memory.db import session_scope
from memory.links.models import Link
from memory.ops.models import AuditEvent
from tests.integration.test_cli_commands import memories  # noqa: F401 - a fixture
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def test_stats_over_http_match_the_cli_and_count_only_visible_notes(
    api_client: TestClient,
    memories: dict[str, str],  # noqa: F811
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
) -> None:
    viewer = api_client.get("/v1/stats", params={"user_id": user_id},
                            headers=bearer(tokens["viewer"]))  # fmt: skip
    assert viewer.status_code == 200, viewer.text
    cli_data = json.loads(
        CliRunner()
        .invoke(cli, ["stats", "--user", user_id, "--tenant", tenant_id, "--json"])
        .output
    )
    http_data = viewer.json()
    for data in (http_data, cli_data):  # B keeps decaying, links arrive after the write
        data.pop("generated_at")
        data.pop("links")
        histogram = data["activation"].pop("histogram")
        data["activation"] = {"notes": sum(b["count"] for b in histogram)}
    assert http_data == cli_data

    agent = api_client.get("/v1/stats", params={"user_id": user_id, "agent_id": "banker"},
                           headers=bearer(tokens["agent"]))  # fmt: skip
    assert agent.status_code == 200
    assert agent.json()["notes"]["by_agent"] == {"assistant-1": 1, "banker": 1}  # no user-only

    missing_agent = api_client.get("/v1/stats", params={"user_id": user_id},
                                   headers=bearer(tokens["agent"]))  # fmt: skip
    assert missing_agent.status_code == 422


def test_links_are_created_once_by_roles_that_may_write_between_visible_notes(
    api_client: TestClient,
    memories: dict[str, str],  # noqa: F811
    tokens: dict[str, str],
    user_id: str,
) -> None:
    body = {"user_id": user_id, "agent_id": "banker", "source_id": memories["budget"],
            "target_id": memories["sister"], "kind": "contradicts"}  # fmt: skip
    first = api_client.post("/v1/links", json=body, headers=bearer(tokens["agent"]))
    assert first.status_code == 201, first.text
    link = first.json()["link"]
    assert first.json()["created"] is True
    assert link["created_by"] == "agent" and link["kind"] == "contradicts"
    again = api_client.post("/v1/links", json=body, headers=bearer(tokens["agent"]))
    assert again.status_code == 201 and again.json() == {"link": link, "created": False}
    with session_scope() as session:
        edges = session.scalars(
            select(Link).where(
                Link.source_id == uuid.UUID(memories["budget"]), Link.kind == "contradicts"
            )
        )
        assert len(list(edges)) == 1
        audit = select(AuditEvent).where(
            AuditEvent.action == "link.created", AuditEvent.entity_id == link["id"]
        )
        assert session.scalar(audit) is not None

    by_operator = api_client.post(
        "/v1/links",
        json={**body, "agent_id": None, "kind": "derived_from"},
        headers=bearer(tokens["operator"]),
    )
    assert by_operator.status_code == 201 and by_operator.json()["link"]["created_by"] == "user"

    invisible = api_client.post(
        "/v1/links",
        json={**body, "agent_id": "assistant-1"},  # cannot see the banker's private note
        headers=bearer(tokens["agent"]),
    )
    assert invisible.status_code == 404
    viewer = api_client.post("/v1/links", json=body, headers=bearer(tokens["viewer"]))
    assert viewer.status_code == 403
    self_link = api_client.post(
        "/v1/links", json={**body, "target_id": memories["budget"]}, headers=bearer(tokens["agent"])
    )
    assert self_link.status_code == 422
    consolidates = api_client.post(
        "/v1/links", json={**body, "kind": "consolidates"}, headers=bearer(tokens["agent"])
    )
    assert consolidates.status_code == 422
