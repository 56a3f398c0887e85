"""GET/POST /v1/tokens and DELETE /v1/tokens/{id}: admin only, tenant-scoped, secret once."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.db import session_scope
from memory.ops.models import AuditEvent
from tests.conftest import make_token
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def test_admin_creates_lists_and_revokes_tokens(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str
) -> None:
    admin = bearer(tokens["admin"])
    created = api_client.post("/v1/tokens", json={"role": "viewer", "name": "ci"}, headers=admin)
    assert created.status_code == 201, created.text
    token = created.json()
    secret, token_id = token["secret"], token["id"]
    assert secret.startswith("muma_") and token["tenant_id"] == tenant_id
    session = api_client.get("/v1/dashboard/session", headers=bearer(secret))
    assert session.status_code == 200 and session.json()["role"] == "viewer"
    listed = api_client.get("/v1/tokens", headers=admin)
    assert listed.status_code == 200
    rows = {t["id"]: t for t in listed.json()["tokens"]}
    assert token_id in rows and "secret" not in rows[token_id]
    assert secret not in listed.text and {t["tenant_id"] for t in rows.values()} == {tenant_id}
    revoked = api_client.delete(f"/v1/tokens/{token_id}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert api_client.get("/v1/dashboard/session", headers=bearer(secret)).status_code == 401
    with session_scope() as db:
        actors = set(db.scalars(select(AuditEvent.actor).where(AuditEvent.entity_id == token_id)))
    assert actors == {f"token:{api_client.get('/v1/tokens', headers=admin).json()['current']}"}


def test_only_admins_of_the_same_tenant_manage_tokens(
    api_client: TestClient, tokens: dict[str, str]
) -> None:
    for role in ("agent", "viewer", "operator"):
        headers = bearer(tokens[role])
        assert api_client.get("/v1/tokens", headers=headers).status_code == 403, role
        created = api_client.post("/v1/tokens", json={"role": "admin"}, headers=headers)
        assert created.status_code == 403, role
    other_admin = make_token("admin", f"t-{uuid.uuid4().hex[:8]}")
    mine = api_client.get("/v1/tokens", headers=bearer(tokens["admin"])).json()
    victim = next(t["id"] for t in mine["tokens"] if t["id"] != mine["current"])
    assert api_client.delete(f"/v1/tokens/{victim}", headers=bearer(other_admin)).status_code == 404
    itself = api_client.delete(f"/v1/tokens/{mine['current']}", headers=bearer(tokens["admin"]))
    assert itself.status_code == 422
    bad = api_client.post("/v1/tokens", json={"role": "root"}, headers=bearer(tokens["admin"]))
    assert bad.status_code == 422
