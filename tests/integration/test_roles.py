"""The role table of the README, checked against the running API: every forbidden role
gets 403 (never 200, never 404 first), and no endpoint but /healthz works without a token.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.helpers import bearer

pytestmark = pytest.mark.integration

NOTE = str(uuid.uuid4())
IDS = {"user_id": "role-user", "agent_id": "role-agent"}
OTHER = str(uuid.uuid4())
WRITERS_ONLY = {"viewer", "operator"}
EPISODE = {**IDS, "session_id": "s", "role": "user", "content": "hello there, a fact"}

# (method, path, json body or None, query params, roles that must get 403)
FORBIDDEN: list[tuple[str, str, dict[str, Any] | None, dict[str, str], set[str]]] = [
    ("POST", "/v1/episodes", EPISODE, {}, {"viewer", "operator"}),
    ("POST", "/v1/memories", {**IDS, "content": "a fact"}, {}, {"viewer", "operator"}),
    ("PATCH", f"/v1/memories/{NOTE}", {**IDS, "pinned": True}, {}, {"viewer"}),
    ("DELETE", f"/v1/memories/{NOTE}", None, IDS, {"viewer"}),
    ("POST", f"/v1/memories/{NOTE}/archive", None, IDS, {"agent", "viewer"}),
    ("POST", f"/v1/memories/{NOTE}/restore", None, IDS, {"agent", "viewer"}),
    (
        "PUT",
        "/v1/sessions/s/working",
        {**IDS, "items": [{"content": "x"}]},
        {},
        {"viewer", "operator"},
    ),
    ("POST", "/v1/sessions/s/promote", {**IDS, "reason": "end"}, {}, {"viewer", "operator"}),
    (
        "POST",
        "/v1/links",
        {**IDS, "source_id": NOTE, "target_id": str(uuid.uuid4())},
        {},
        {"viewer"},
    ),
    ("GET", "/v1/dead-letters", None, {}, {"agent"}),
    ("GET", "/v1/users", None, {}, {"agent"}),
    ("GET", "/metrics", None, {}, {"agent"}),
    ("POST", f"/v1/dead-letters/{NOTE}/retry", None, {}, {"agent", "viewer"}),
    ("POST", f"/v1/conflicts/{NOTE}/resolve", {"keep": "a"}, IDS, {"agent", "viewer"}),
    ("POST", "/v1/consolidate", {"user_id": "role-user"}, {}, {"viewer"}),
    ("PUT", "/v1/agents/role-agent", {"domains": ["x"]}, {}, {"agent", "viewer", "operator"}),
    ("GET", "/v1/tokens", None, {}, {"agent", "viewer", "operator"}),
    ("POST", "/v1/tokens", {"role": "viewer"}, {}, {"agent", "viewer", "operator"}),
    ("DELETE", f"/v1/tokens/{NOTE}", None, {}, {"agent", "viewer", "operator"}),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "params", "forbidden"),
    FORBIDDEN,
    ids=[f"{m} {p}" for m, p, *_ in FORBIDDEN],
)
def test_forbidden_roles_get_403(
    api_client: TestClient,
    tokens: dict[str, str],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    params: dict[str, str],
    forbidden: set[str],
) -> None:
    for role in ("agent", "viewer", "operator", "admin"):
        response = api_client.request(
            method, path, json=body, params=params, headers=bearer(tokens[role])
        )
        if role in forbidden:
            assert response.status_code == 403, f"{role}: {response.status_code} {response.text}"
        else:
            assert response.status_code not in (401, 403), f"{role}: {response.text}"


def test_revoked_token_is_401(api_client: TestClient, tenant_id: str) -> None:
    from memory.access.tokens import revoke_token
    from memory.db import session_scope
    from tests.conftest import make_token

    secret = make_token("admin", tenant_id)
    assert api_client.get("/v1/agents", headers=bearer(secret)).status_code == 200
    with session_scope() as session:
        from sqlalchemy import select

        from memory.access.models import ApiToken
        from memory.access.tokens import hash_token

        token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
        assert token is not None
        revoke_token(session=session, token_ref=str(token.id))
    assert api_client.get("/v1/agents", headers=bearer(secret)).status_code == 401
