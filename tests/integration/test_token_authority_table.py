"""The table of roles and bindings (docs/access.md, "Roles"), checked route by route.

Every route of the FastAPI app must have a row here (a new route fails
`test_every_route_is_in_the_table` until it is given one), and every row is called with a
token of every role, unbound and bound to alice, in a tenant where bob (another user) has
memories, a failed episode with its dead letter, a conflict, a bound token and working
memory. A refused call must be 403; an allowed one must not be (nor 401 nor 5xx); an
allowed call by a token bound to alice must answer nothing of bob. A bound token that
names bob or bob's ids must be refused (403, or 404 where an id's existence is hidden).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from tests.conftest import make_token
from tests.support.helpers import SeededUser, bearer, seed_user

pytestmark = pytest.mark.integration

ROLES = ("agent", "viewer", "operator", "admin")
ALL = frozenset(ROLES)
USER_LEVEL = frozenset({"viewer", "operator", "admin"})
WRITERS = frozenset({"agent", "admin"})
EDITORS = frozenset({"agent", "operator", "admin"})
OPERATORS = frozenset({"operator", "admin"})
ADMIN = frozenset({"admin"})
ROLES_DOC = Path(__file__).resolve().parents[2] / "docs" / "access.md"


@dataclass(frozen=True)
class Target:
    """Whose user id and whose resource ids a call names (alice's own, or bob's)."""

    user_id: str
    notes: tuple[str, str]
    spare_note_id: str
    dead_letter_id: str
    conflict_id: str
    token_id: str
    session_id: str

    @classmethod
    def of(cls, user: SeededUser) -> Target:
        return cls(
            user.user_id,
            user.note_ids,
            user.spare_note_id,
            user.dead_letter_id,
            user.conflict_id,
            user.token_id,
            user.session_id,
        )


Call = tuple[str, dict[str, Any], dict[str, Any] | None]  # path, query, json body


@dataclass(frozen=True)
class Row:
    """One route: the roles it allows (None: public, no token), whether a user-bound token
    may call it, and the request (`build(target, role)`); `names_user` and
    `names_resource` say whether the request carries the target's user id or ids;
    `narrowed` checks counts that a bound token's answer must not take from other users."""

    method: str
    path: str
    roles: frozenset[str] | None
    build: Callable[[Target, str], Call]
    bound_allowed: bool = True
    names_user: bool = True
    names_resource: bool = False
    narrowed: Callable[[Any], bool] | None = None  # holds for a bound token's JSON answer


def ids(t: Target, role: str) -> dict[str, str]:
    """The user to act for, and the agent an agent token must name."""
    return {"user_id": t.user_id, **({"agent_id": "main"} if role == "agent" else {})}


def agent_ids(t: Target, _: str) -> dict[str, str]:
    return {"user_id": t.user_id, "agent_id": "main"}


def plain(path: str) -> Callable[[Target, str], Call]:
    return lambda t, r: (path, {}, None)


def query(path: Callable[[Target], str], **extra: Any) -> Callable[[Target, str], Call]:
    return lambda t, r: (path(t), {**ids(t, r), **extra}, None)


def body(
    path: Callable[[Target], str], make: Callable[[Target, str], dict[str, Any]]
) -> Callable[[Target, str], Call]:
    return lambda t, r: (path(t), {}, make(t, r))


def note(suffix: str = "") -> Callable[[Target], str]:
    return lambda t: f"/v1/memories/{t.notes[0]}{suffix}"


def spare(suffix: str) -> Callable[[Target], str]:
    return lambda t: f"/v1/memories/{t.spare_note_id}{suffix}"


def fixed(path: str) -> Callable[[Target], str]:
    return lambda t: path


def working(t: Target) -> str:
    return f"/v1/sessions/{t.session_id}/working"


# fmt: off
PUBLIC = [
    Row("GET", p, None, plain(p), names_user=False)
    for p in ("/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/dashboard",
              "/dashboard/")
] + [Row("GET", "/dashboard/{name}", None, plain("/dashboard/app.js"), names_user=False)]

TENANT_VIEWS = [
    Row("GET", "/v1/dashboard/session", ALL, plain("/v1/dashboard/session"), names_user=False),
    Row("GET", "/v1/system/status", ALL, plain("/v1/system/status"), names_user=False,
        narrowed=lambda answer: answer["queues"] == {}),
    Row("GET", "/v1/pipeline", ALL, plain("/v1/pipeline"), names_user=False,
        narrowed=lambda answer: answer["queues"] == {} and answer["dead_letters"] <= 1),
    Row("GET", "/v1/agents", ALL, plain("/v1/agents"), names_user=False),
    Row("GET", "/v1/users", USER_LEVEL, plain("/v1/users"), names_user=False),
    Row("GET", "/v1/dead-letters", USER_LEVEL, plain("/v1/dead-letters"), names_user=False),
    Row("POST", "/v1/dead-letters/{dead_letter_id}/retry", OPERATORS,
        lambda t, r: (f"/v1/dead-letters/{t.dead_letter_id}/retry", {}, None),
        names_user=False, names_resource=True),
    Row("GET", "/metrics", USER_LEVEL, plain("/metrics"), bound_allowed=False, names_user=False),
    Row("PUT", "/v1/agents/{agent_id}", ADMIN,
        body(fixed("/v1/agents/spy"), lambda t, r: {"can_see_private": True}),
        bound_allowed=False, names_user=False),
    Row("GET", "/v1/tokens", ADMIN, plain("/v1/tokens"), names_user=False),
    Row("POST", "/v1/tokens", ADMIN,
        body(fixed("/v1/tokens"), lambda t, r: {"role": "viewer", "user_id": t.user_id})),
    Row("DELETE", "/v1/tokens/{token_id}", ADMIN,
        lambda t, r: (f"/v1/tokens/{t.token_id}", {}, None),
        names_user=False, names_resource=True),
]

# Erasure (admin, bound to no user): allowed calls name no one that exists (a user, a
# tenant or an erasure the table's world does not hold), so they answer 404 or 422 and
# erase nothing of it.
ERASURE = [
    Row("POST", "/v1/users/{user_id}/erase", ADMIN,
        body(fixed("/v1/users/nobody-to-erase/erase"), lambda t, r: {"reason": "table"}),
        bound_allowed=False, names_user=False),
    Row("POST", "/v1/tenant/erase", ADMIN,
        body(fixed("/v1/tenant/erase"), lambda t, r: {"confirm": "not-this-tenant"}),
        bound_allowed=False, names_user=False),
    Row("GET", "/v1/erasures/{erasure_id}", ADMIN,
        plain(f"/v1/erasures/{uuid.UUID(int=1)}"), bound_allowed=False, names_user=False),
]

EPISODE = {"session_id": "s-table", "role": "user", "content": "a table fact"}
USER_DATA = [
    Row("POST", "/v1/episodes", WRITERS,
        body(fixed("/v1/episodes"), lambda t, r: {**agent_ids(t, r), **EPISODE})),
    Row("POST", "/v1/memories", WRITERS,
        body(fixed("/v1/memories"), lambda t, r: {**agent_ids(t, r), "content": "a fact"})),
    Row("PUT", "/v1/sessions/{session_id}/working", WRITERS,
        body(working, lambda t, r: {**agent_ids(t, r), "items": [{"content": "x"}]})),
    Row("GET", "/v1/sessions/{session_id}/working", ALL, query(working)),
    Row("POST", "/v1/sessions/{session_id}/promote", WRITERS,
        body(lambda t: "/v1/sessions/s-promote/promote",
             lambda t, r: {**ids(t, r), "reason": "end"})),
    Row("POST", "/v1/search", ALL,
        body(fixed("/v1/search"), lambda t, r: {**ids(t, r), "query": "fact"})),
    Row("POST", "/v1/context", ALL,
        body(fixed("/v1/context"), lambda t, r: {**ids(t, r), "prompt": "fact", "dry_run": True})),
    Row("POST", "/v1/agents/search", ALL,
        body(fixed("/v1/agents/search"), lambda t, r: {**ids(t, r), "query": "fact"})),
    Row("GET", "/v1/memories", ALL, query(fixed("/v1/memories"))),
    Row("GET", "/v1/memories/{note_id}", ALL, query(note()), names_resource=True),
    Row("GET", "/v1/memories/{note_id}/history", ALL, query(note("/history")),
        names_resource=True),
    Row("GET", "/v1/memories/{note_id}/graph", ALL, query(note("/graph")), names_resource=True),
    Row("GET", "/v1/memories/{note_id}/activation", ALL, query(note("/activation")),
        names_resource=True),
    Row("GET", "/v1/memories/{note_id}/provenance", USER_LEVEL, query(note("/provenance")),
        names_resource=True),
    Row("PATCH", "/v1/memories/{note_id}", EDITORS,
        body(note(), lambda t, r: {**ids(t, r), "pinned": True}), names_resource=True),
    Row("DELETE", "/v1/memories/{note_id}", EDITORS, query(spare("")), names_resource=True),
    Row("POST", "/v1/memories/{note_id}/archive", OPERATORS, query(spare("/archive")),
        names_resource=True),
    Row("POST", "/v1/memories/{note_id}/restore", OPERATORS, query(spare("/restore")),
        names_resource=True),
    Row("POST", "/v1/links", EDITORS,
        body(fixed("/v1/links"),
             lambda t, r: {**ids(t, r), "source_id": t.notes[0], "target_id": t.notes[1]}),
        names_resource=True),
    Row("GET", "/v1/events", ALL, query(fixed("/v1/events"), timeout=0.2)),
    Row("GET", "/v1/stats", ALL, query(fixed("/v1/stats")),
        narrowed=lambda answer: "dead_letters_tenant" not in answer["pipeline"]),
    Row("GET", "/v1/export", ALL, query(fixed("/v1/export"))),
    Row("GET", "/v1/conflicts", ALL, query(fixed("/v1/conflicts"))),
    Row("GET", "/v1/journal", ALL, query(fixed("/v1/journal"))),
    # The seeded notes are not candidates: an allowed decision answers 409, not a change.
    Row("GET", "/v1/candidates", ALL, query(fixed("/v1/candidates"))),
    Row("POST", "/v1/candidates/{note_id}/approve", EDITORS,
        body(lambda t: f"/v1/candidates/{t.notes[0]}/approve", ids), names_resource=True),
    Row("POST", "/v1/candidates/{note_id}/reject", EDITORS,
        body(lambda t: f"/v1/candidates/{t.spare_note_id}/reject", ids), names_resource=True),
    Row("POST", "/v1/conflicts/{conflict_id}/resolve", OPERATORS,
        body(lambda t: f"/v1/conflicts/{t.conflict_id}/resolve",
             lambda t, r: {"user_id": t.user_id, "keep": "both"}),
        names_resource=True),
    Row("POST", "/v1/consolidate", EDITORS,
        body(fixed("/v1/consolidate"), lambda t, r: {"user_id": t.user_id})),
]
# fmt: on

TABLE = PUBLIC + TENANT_VIEWS + ERASURE + USER_DATA


@dataclass(frozen=True)
class World:
    tenant_id: str
    alice: SeededUser
    bob: SeededUser
    unbound: dict[str, str]
    bound: dict[str, str]  # role -> a token bound to alice


@pytest.fixture(scope="module")
def world(database_url: str, redis_url: str) -> World:
    tenant_id = f"t-{uuid.uuid4().hex[:10]}"
    alice = seed_user(tenant_id, f"alice-{uuid.uuid4().hex[:6]}", f"ALICE{uuid.uuid4().hex[:8]}")
    bob = seed_user(tenant_id, f"bob-{uuid.uuid4().hex[:6]}", f"BOB{uuid.uuid4().hex[:8]}")
    return World(
        tenant_id,
        alice,
        bob,
        {role: make_token(role, tenant_id) for role in ROLES},
        {role: make_token(role, tenant_id, alice.user_id) for role in ROLES},
    )


def _route_keys(client: TestClient) -> set[tuple[str, str]]:
    keys = set()
    for route in iter_route_contexts(client.app.routes):  # type: ignore[attr-defined]
        for method in route.methods or ():
            if method != "HEAD":
                keys.add((method, route.path))
    return keys


def test_every_route_is_in_the_table(api_client: TestClient) -> None:
    table = {(row.method, row.path) for row in TABLE}
    assert len(table) == len(TABLE), "a route has two rows"
    assert _route_keys(api_client) == table


def _readme_rows() -> dict[str, list[str]]:
    """The cells of the docs' role table, by each `METHOD /path` named in a row."""
    section = ROLES_DOC.read_text().split("### Roles", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`"):
            for name in cells[0].split("`")[1::2]:
                assert name not in rows, f"{name} is in two rows of docs/access.md"
                rows[name] = cells
    return rows


def test_the_readme_table_is_this_table() -> None:
    """Each route is in the docs' table, with the roles and the binding rule above."""
    readme = _readme_rows()
    for row in TABLE:
        name = f"{row.method} {row.path}"
        assert name in readme, f"{name} is not in the table of docs/access.md"
        cells = readme[name]
        if row.roles is None:
            assert "no token needed" in cells[5], name
            continue
        marked = {role for role, cell in zip(ROLES, cells[1:5], strict=True) if "✓" in cell}
        assert marked == row.roles, name
        assert cells[5].startswith("403") == (not row.bound_allowed), name


def _send(client: TestClient, row: Row, call: Call, token: str | None) -> Any:
    path, params, json = call
    headers = bearer(token) if token else {}
    return client.request(row.method, path, params=params, json=json, headers=headers)


def _allowed(response: Any, who: str) -> None:
    assert response.status_code not in (401, 403), f"{who}: {response.text[:300]}"
    assert response.status_code < 500, f"{who}: {response.status_code} {response.text[:300]}"


def _no_trace(response: Any, strings: list[str], who: str) -> None:
    found = [s for s in strings if s in response.text]
    assert not found, f"{who} answered {found} of bob: {response.text[:500]}"


@pytest.mark.parametrize("row", TABLE, ids=[f"{r.method} {r.path}" for r in TABLE])
def test_role_and_binding(api_client: TestClient, world: World, row: Row) -> None:
    alice = Target.of(world.alice)
    if row.roles is None:  # /healthz answers 503 while no worker runs: still no token
        response = _send(api_client, row, row.build(alice, "viewer"), None)
        assert response.status_code in ((200, 503) if row.path == "/healthz" else (200,))
        return
    assert _send(api_client, row, row.build(alice, "admin"), None).status_code == 401
    for role in ROLES:
        for bound in (False, True):
            token = (world.bound if bound else world.unbound)[role]
            who = f"{role}{' bound to alice' if bound else ''}"
            response = _send(api_client, row, row.build(alice, role), token)
            if role not in row.roles or (bound and not row.bound_allowed):
                assert response.status_code == 403, f"{who}: {response.status_code}"
                continue
            _allowed(response, who)
            if bound:
                _no_trace(response, world.bob.strings(), who)
                assert row.narrowed is None or row.narrowed(response.json()), who
                _aimed_at_bob(api_client, world, row, role, token, who)


def _aimed_at_bob(
    client: TestClient, world: World, row: Row, role: str, token: str, who: str
) -> None:
    """A token bound to alice naming bob's ids (as alice), or bob himself, is refused."""
    bob = Target.of(world.bob)
    variants = []
    if row.names_resource:
        variants.append(("bob's ids", replace(bob, user_id=world.alice.user_id)))
    if row.names_user:
        variants.append(("bob", bob))
    for what, target in variants:
        response = _send(client, row, row.build(target, role), token)
        assert response.status_code in (403, 404), f"{who} on {what}: {response.text[:300]}"
        _no_trace(response, [world.bob.marker], f"{who} on {what}")
