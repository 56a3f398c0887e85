"""Issue #44's token authority cases, one by one: in a tenant with users alice and bob, a
token bound to alice never creates, lists, revokes or reads anything of bob, and never
acts tenant-wide; the CLI (the machine's operator, bound to no one) keeps every power.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.access.models import Agent, ApiToken
from memory.access.tokens import Principal, create_token, list_tokens, revoke_token
from memory.cli.main import cli
from memory.db import session_scope
from memory.errors import AccessDeniedError, NotFoundError
from memory.ops.models import DeadLetter
from tests.conftest import make_token
from tests.support.helpers import SeededUser, bearer, seed_user

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Tenant:
    tenant_id: str
    alice: SeededUser
    bob: SeededUser

    def token(self, role: str, user: SeededUser | None = None) -> dict[str, str]:
        return bearer(make_token(role, self.tenant_id, user.user_id if user else None))


@pytest.fixture()
def tenant(database_url: str, redis_url: str) -> Tenant:
    tenant_id = f"t-{uuid.uuid4().hex[:10]}"
    return Tenant(
        tenant_id,
        seed_user(tenant_id, f"alice-{uuid.uuid4().hex[:6]}", f"ALICE{uuid.uuid4().hex[:8]}"),
        seed_user(tenant_id, f"bob-{uuid.uuid4().hex[:6]}", f"BOB{uuid.uuid4().hex[:8]}"),
    )


def _token_row(token_id: str) -> ApiToken:
    with session_scope() as session:
        token = session.get(ApiToken, uuid.UUID(token_id))
        assert token is not None
        session.expunge(token)
        return token


# --- a user-bound admin and tokens -----------------------------------------------------


def test_a_bound_admin_creates_only_tokens_bound_to_its_user(
    api_client: TestClient, tenant: Tenant
) -> None:
    admin = tenant.token("admin", tenant.alice)
    created = api_client.post("/v1/tokens", json={"role": "admin", "name": "x"}, headers=admin)
    assert created.status_code == 201, created.text
    assert created.json()["user_id"] == tenant.alice.user_id
    minted = bearer(created.json()["secret"])
    reads_bob = api_client.get(
        "/v1/memories", params={"user_id": tenant.bob.user_id}, headers=minted
    )
    assert reads_bob.status_code == 403
    note = api_client.get(f"/v1/memories/{tenant.bob.note_ids[0]}", headers=minted)
    assert note.status_code == 404 and tenant.bob.marker not in note.text
    for user_id in (tenant.bob.user_id, "someone-new"):
        other = api_client.post(
            "/v1/tokens", json={"role": "viewer", "user_id": user_id}, headers=admin
        )
        assert other.status_code == 403, other.text
        assert "user_id" in other.json()["detail"]
    own = api_client.post(
        "/v1/tokens", json={"role": "agent", "user_id": tenant.alice.user_id}, headers=admin
    )
    assert own.status_code == 201 and own.json()["user_id"] == tenant.alice.user_id


def test_a_bound_admin_revokes_only_its_users_tokens(
    api_client: TestClient, tenant: Tenant
) -> None:
    admin = tenant.token("admin", tenant.alice)
    unbound = make_token("viewer", tenant.tenant_id)
    unbound_id = str(_id_of(unbound))
    for victim in (tenant.bob.token_id, unbound_id):
        refused = api_client.delete(f"/v1/tokens/{victim}", headers=admin)
        assert refused.status_code == 404, refused.text
        assert _token_row(victim).revoked_at is None
    assert api_client.get("/v1/system/status", headers=bearer(unbound)).status_code == 200
    revoked = api_client.delete(f"/v1/tokens/{tenant.alice.token_id}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None


def test_a_bound_admin_lists_only_its_users_tokens(api_client: TestClient, tenant: Tenant) -> None:
    make_token("admin", tenant.tenant_id)  # unbound: not listed to a bound admin
    listed = api_client.get("/v1/tokens", headers=tenant.token("admin", tenant.alice))
    assert listed.status_code == 200
    tokens = listed.json()["tokens"]
    assert {t["user_id"] for t in tokens} == {tenant.alice.user_id}
    assert tenant.alice.token_id in {t["id"] for t in tokens}
    assert tenant.bob.token_id not in listed.text and tenant.bob.marker not in listed.text
    everything = api_client.get("/v1/tokens", headers=tenant.token("admin")).json()["tokens"]
    assert {tenant.alice.token_id, tenant.bob.token_id} <= {t["id"] for t in everything}
    assert None in {t["user_id"] for t in everything}


def test_changing_an_agent_needs_an_admin_bound_to_no_user(
    api_client: TestClient, tenant: Tenant
) -> None:
    body = {"can_see_private": True}
    refused = api_client.put(
        "/v1/agents/spy", json=body, headers=tenant.token("admin", tenant.alice)
    )
    assert refused.status_code == 403, refused.text
    assert "bound to a user" in refused.json()["detail"]
    with session_scope() as session:
        assert session.scalar(select(Agent).where(Agent.tenant_id == tenant.tenant_id)) is None
    allowed = api_client.put("/v1/agents/spy", json=body, headers=tenant.token("admin"))
    assert allowed.status_code == 200 and allowed.json()["can_see_private"] is True
    session_info = api_client.get(
        "/v1/dashboard/session", headers=tenant.token("admin", tenant.alice)
    ).json()
    assert session_info["features"]["put_agent"] is False
    assert session_info["features"]["metrics"] is False


# --- other user-bound tokens act on their user only ------------------------------------


def test_a_bound_operator_retries_only_its_users_dead_letters(
    api_client: TestClient, tenant: Tenant
) -> None:
    operator = tenant.token("operator", tenant.alice)
    bobs = api_client.post(f"/v1/dead-letters/{tenant.bob.dead_letter_id}/retry", headers=operator)
    assert bobs.status_code == 404, bobs.text
    with session_scope() as session:
        letter = session.get(DeadLetter, uuid.UUID(tenant.bob.dead_letter_id))
        assert letter is not None and letter.requeued_at is None
    own = api_client.post(f"/v1/dead-letters/{tenant.alice.dead_letter_id}/retry", headers=operator)
    assert own.status_code == 202, own.text


def test_a_bound_viewer_sees_only_its_users_dead_letters_and_no_metrics(
    api_client: TestClient, tenant: Tenant
) -> None:
    viewer = tenant.token("viewer", tenant.alice)
    letters = api_client.get("/v1/dead-letters", headers=viewer)
    assert letters.status_code == 200
    assert [d["id"] for d in letters.json()["dead_letters"]] == [tenant.alice.dead_letter_id]
    assert tenant.bob.marker not in letters.text
    metrics = api_client.get("/metrics", headers=viewer)
    assert metrics.status_code == 403 and "bound to a user" in metrics.json()["detail"]
    users = api_client.get("/v1/users", headers=viewer).json()["users"]
    assert [u["user_id"] for u in users] == [tenant.alice.user_id]
    assert users[0]["notes"] == 3 and users[0]["episodes"] == 1
    unbound = tenant.token("viewer")
    everyone = api_client.get("/v1/dead-letters", headers=unbound).json()["dead_letters"]
    assert {d["id"] for d in everyone} == {tenant.alice.dead_letter_id, tenant.bob.dead_letter_id}
    assert api_client.get("/metrics", headers=unbound).status_code == 200


def test_a_bound_agent_token_reads_its_users_pipeline_counts(
    api_client: TestClient, tenant: Tenant
) -> None:
    bound = api_client.get("/v1/pipeline", headers=tenant.token("agent", tenant.alice)).json()
    assert sum(bound["episodes"].values()) == 1 and bound["episodes"]["failed"] == 1
    assert bound["dead_letters"] == 1 and bound["queues"] == {}
    tenant_wide = api_client.get("/v1/pipeline", headers=tenant.token("agent")).json()
    assert tenant_wide["episodes"]["failed"] == 2 and tenant_wide["dead_letters"] == 2
    assert set(tenant_wide["queues"]) >= {"ingest", "embed", "llm", "maintenance"}


def test_bound_tokens_get_no_tenant_wide_counts_in_stats_or_status(
    api_client: TestClient, tenant: Tenant
) -> None:
    bound = tenant.token("viewer", tenant.alice)
    stats = api_client.get("/v1/stats", headers=bound).json()
    assert stats["pipeline"]["dead_letters"] == 1
    assert "dead_letters_tenant" not in stats["pipeline"]
    unbound = tenant.token("viewer")
    tenant_stats = api_client.get(
        "/v1/stats", params={"user_id": tenant.alice.user_id}, headers=unbound
    ).json()
    assert tenant_stats["pipeline"]["dead_letters_tenant"] == 2
    assert api_client.get("/v1/system/status", headers=bound).json()["queues"] == {}
    assert api_client.get("/v1/system/status", headers=unbound).json()["queues"] != {}


# --- the rules themselves, and the CLI -------------------------------------------------


def _id_of(secret: str) -> uuid.UUID:
    from memory.access.tokens import hash_token

    with session_scope() as session:
        token_id = session.scalar(
            select(ApiToken.id).where(ApiToken.token_hash == hash_token(secret))
        )
    assert token_id is not None
    return token_id


def test_no_token_manages_a_stronger_or_wider_token(tenant: Tenant) -> None:
    operator = Principal(uuid.uuid4(), "operator", tenant.tenant_id)
    bound_admin = Principal(uuid.uuid4(), "admin", tenant.tenant_id, tenant.alice.user_id)
    foreign_admin = Principal(uuid.uuid4(), "admin", f"t-{uuid.uuid4().hex[:8]}")
    with session_scope() as session:
        with pytest.raises(AccessDeniedError):
            create_token(session=session, role="viewer", tenant_id="x", by=operator)
        assert list_tokens(session=session, by=operator) == []
        assert list_tokens(session=session, by=foreign_admin) == []
        listed = list_tokens(session=session, by=bound_admin)
        assert {t.user_id for t in listed} == {tenant.alice.user_id}
        for by, ref in ((operator, tenant.alice.token_id), (bound_admin, tenant.bob.token_id),
                        (foreign_admin, tenant.alice.token_id)):  # fmt: skip
            with pytest.raises(NotFoundError):
                revoke_token(session=session, token_ref=ref, by=by)
        token, _ = create_token(session=session, role="admin", tenant_id="x", by=bound_admin)
        assert (token.tenant_id, token.user_id) == (tenant.tenant_id, tenant.alice.user_id)


def test_the_cli_acts_as_the_machines_operator(api_client: TestClient, tenant: Tenant) -> None:
    runner = CliRunner()
    created = runner.invoke(cli, ["tokens", "create", "--role", "admin", "--user",
                                  tenant.alice.user_id, "--tenant", tenant.tenant_id])  # fmt: skip
    assert created.exit_code == 0, created.output
    assert f"bound to user {tenant.alice.user_id}" in created.output
    admin = bearer(created.output.strip().splitlines()[-1])
    escaped = api_client.post("/v1/tokens", json={"role": "admin", "name": "x"}, headers=admin)
    assert escaped.json()["user_id"] == tenant.alice.user_id
    assert runner.invoke(cli, ["tokens", "list", "--tenant", tenant.tenant_id]).exit_code == 0
    revoked = runner.invoke(cli, ["tokens", "revoke", tenant.bob.token_id])
    assert revoked.exit_code == 0, revoked.output
    assert _token_row(tenant.bob.token_id).revoked_at is not None
    agent = runner.invoke(cli, ["agents", "add", "spy", "--can-see-private",
                                "--tenant", tenant.tenant_id])  # fmt: skip
    assert agent.exit_code == 0, agent.output
