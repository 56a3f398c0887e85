"""Bad-input fuzzing: schemathesis over every operation of /openapi.json, in process.

Invariants checked: no generated request (valid or deliberately invalid per the schema)
gets a server error, with an admin token and with an agent token; responses conform to
their documented schema and content type; invalid input is rejected with a 4xx. The
explicit cases below cover what a schema cannot describe: malformed JSON, bodies past
`api.max_body_bytes`, and control, bidirectional and huge strings in ids.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import CheckContext, not_a_server_error
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
)

from memory.config import get_settings
from tests.conftest import make_token

pytestmark = pytest.mark.integration

# Bounded: ~35 operations x 2 tokens; the coverage phase adds the schema's edge cases.
MAX_EXAMPLES = 20


def invalid_data_rejected(
    ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """schemathesis' negative-data check, less pydantic's lax scalar coercion (a JSON 0 for
    a boolean or "10" for an integer is converted, not refused: FastAPI's default) and
    less what `_call_as` replaces (the Authorization header, `?wait=`) and less names no
    operation declares (HTTP lets a client send any header, FastAPI ignores unknown query
    parameters)."""
    try:
        return negative_data_rejection(ctx, response, case)
    except AcceptedNegativeData as failure:
        _, _, components = failure.message.partition("Invalid component:")
        lines = [line for line in components.splitlines() if line.strip(" -")]
        tolerated = (
            "Incorrect type",
            "in header - object with unexpected properties",
            "parameter `Authorization` in header",
            "(was Authorization)",
            "/properties/Authorization",
            "/properties/wait",
            "query: violates `additionalProperties`",
        )
        if lines and all(any(t in line for t in tolerated) for line in lines):
            return None
        raise


CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    content_type_conformance,
    invalid_data_rejected,
]
CREDENTIAL_HEADERS = ("authorization", "x-muma-tenant")


@pytest.fixture(scope="module")
def fuzz_tokens(database_url: str, redis_url: str) -> dict[str, str]:
    tenant = f"t-fuzz-{uuid.uuid4().hex[:8]}"
    return {role: make_token(role, tenant) for role in ("admin", "agent")}


def _load_schema() -> Any:
    """The app's own OpenAPI document, served in process (ASGI); no server, no network.

    Loaded eagerly (pytest 9.2 broke schemathesis' lazy `from_fixture`); the app touches
    the database and the embedder only on its first request, inside the tests.
    """
    from memory.api.app import create_app

    app = create_app()
    loaded = schemathesis.openapi.from_dict(app.openapi())
    loaded.app = app
    loaded.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)
    # An open event stream ends only when the client leaves (explicit cases below);
    # /healthz takes no input and answers 503 by design while no worker runs.
    return loaded.exclude(path="/v1/events").exclude(path="/healthz")


schema = _load_schema()
FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _call_as(case: schemathesis.Case, token: str) -> None:
    """Send the case with a valid token (generated credentials would only test 401s)."""
    for name in list(case.headers or {}):
        if name.lower() in CREDENTIAL_HEADERS:
            del case.headers[name]
    if case.query and "wait" in case.query:
        case.query["wait"] = 0  # ?wait= polls for a worker this test does not run
    response = case.call(headers={"Authorization": f"Bearer {token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}"
    )
    case.validate_response(response, checks=CHECKS)


@schema.parametrize()
@FUZZ_SETTINGS
def test_no_server_errors_as_admin(case: schemathesis.Case, fuzz_tokens: dict[str, str]) -> None:
    _call_as(case, fuzz_tokens["admin"])


@schema.parametrize()
@FUZZ_SETTINGS
def test_no_server_errors_as_agent(case: schemathesis.Case, fuzz_tokens: dict[str, str]) -> None:
    _call_as(case, fuzz_tokens["agent"])


# --- Explicit cases: what a schema cannot describe --------------------------------------

JSON_ROUTES = [
    ("POST", "/v1/episodes"),
    ("POST", "/v1/memories"),
    ("POST", "/v1/search"),
    ("POST", "/v1/context"),
    ("POST", "/v1/agents/search"),
    ("POST", "/v1/links"),
    ("PATCH", f"/v1/memories/{uuid.UUID(int=1)}"),
    ("PUT", "/v1/sessions/s1/working"),
    ("POST", "/v1/sessions/s1/promote"),
    ("PUT", "/v1/agents/a1"),
    ("POST", "/v1/tokens"),
    ("POST", "/v1/consolidate"),
]
MALFORMED = [
    b'{"user_id": "u1", "query": ',  # truncated
    b'{"user_id": "u1"} trailing',  # extra data
    b"\xc3\x1a\xb2\xff",  # not UTF-8
    b"{'user_id': 'u1'}",  # not JSON quoting
    b'{"user_id": "u1",}',  # trailing comma
]


@pytest.fixture()
def admin(api_client: TestClient, tokens: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['admin']}", "Content-Type": "application/json"}


def _assert_names(response: httpx.Response, field: str, statuses: tuple[int, ...]) -> None:
    assert response.status_code in statuses, response.text
    body = response.json()
    assert body["error"] == "InvalidInputError", body
    assert field in body["detail"], body


@pytest.mark.parametrize(("method", "path"), JSON_ROUTES)
def test_malformed_json_is_a_4xx_naming_the_body(
    api_client: TestClient, admin: dict[str, str], method: str, path: str
) -> None:
    for raw in MALFORMED:
        response = api_client.request(method, path, content=raw, headers=admin)
        _assert_names(response, "body", (400, 422))


@pytest.mark.parametrize(("method", "path"), JSON_ROUTES)
def test_bodies_past_the_limit_are_refused(
    api_client: TestClient, admin: dict[str, str], method: str, path: str
) -> None:
    limit = get_settings().api.max_body_bytes
    declared = api_client.request(method, path, content=b" " * (limit + 1), headers=admin)
    _assert_names(declared, "body", (413,))

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        for _ in range(limit // (1 << 20) + 2):
            yield b" " * (1 << 20)

    streamed = api_client.request(method, path, content=chunks(), headers=admin)
    assert "content-length" not in streamed.request.headers
    _assert_names(streamed, "body", (413,))


HOSTILE_IDS = [
    pytest.param("\x00", id="nul"),
    pytest.param("user\x00id", id="embedded-nul"),
    pytest.param("\x1b[31mred", id="escape"),
    pytest.param("\u200fuser", id="rtl-mark"),
    pytest.param("abc\u202edcba", id="rtl-override"),
    pytest.param("\ud83d", id="lone-surrogate"),
    pytest.param("x" * 10_240, id="10kB"),
    pytest.param("   ", id="blank"),
]


def _id_requests(field: str, value: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request kwargs) placing `value` in `field` of each kind of route.

    A lone surrogate exists only inside JSON (as an escape): in a URL its bytes would be
    decoded to U+FFFD, a valid if odd id, so it is sent in bodies only.
    """
    ids = {"user_id": "u1", "agent_id": "a1", "session_id": "s1", field: value}
    episode = {**ids, "role": "user", "content": "I live in Lisbon."}
    pair = {k: v for k, v in ids.items() if k != "session_id"}
    requests = [
        ("POST", "/v1/episodes", {"json": episode}),
        ("POST", "/v1/episodes", {"json": {"episodes": [episode]}}),
        ("POST", "/v1/memories", {"json": {**ids, "content": "I live in Lisbon."}}),
        ("POST", "/v1/search", {"json": {**ids, "query": "where"}}),
        ("POST", "/v1/context", {"json": {**ids, "prompt": "where"}}),
    ]
    if field != "session_id":
        requests.append(("POST", "/v1/agents/search", {"json": {**pair, "query": "x"}}))
        requests.append(("PUT", "/v1/sessions/s1/working", {"json": {**pair, "items": []}}))
    if "\ud800" <= max(value) <= "\udfff":
        return requests
    if field != "session_id":
        for path in ("/v1/memories", "/v1/stats", "/v1/export", "/v1/conflicts"):
            requests.append(("GET", path, {"params": pair}))
        requests.append(("GET", "/v1/events", {"params": {**pair, "timeout": 0.1}}))
    if field == "agent_id":
        requests.append(("PUT", f"/v1/agents/{quote(value, safe='')}", {"json": {}}))
    if field == "session_id":
        path = f"/v1/sessions/{quote(value, safe='')}/working"
        requests.append(("GET", path, {"params": {"user_id": "u1"}}))
        requests.append(("PUT", path, {"json": {"user_id": "u1", "agent_id": "a1", "items": []}}))
        promote = {"user_id": "u1", "agent_id": "a1", "reason": "end"}
        requests.append(("POST", path.replace("/working", "/promote"), {"json": promote}))
    return requests


@pytest.mark.parametrize("value", HOSTILE_IDS)
@pytest.mark.parametrize("field", ["user_id", "agent_id", "session_id"])
def test_hostile_ids_are_a_4xx_naming_the_field(
    api_client: TestClient, admin: dict[str, str], field: str, value: str
) -> None:
    for method, path, kwargs in _id_requests(field, value):
        if "json" in kwargs:  # json.dumps escapes a lone surrogate, as a client would
            kwargs = {"content": json.dumps(kwargs["json"]).encode()}
        response = api_client.request(method, path, headers=admin, **kwargs)
        where = f"{method} {path[:80]}: {response.text[:300]}"
        assert response.status_code == 422, where
        assert field in response.json()["detail"], where


@pytest.mark.parametrize("value", ["🙂", "ユーザー", "user-ok.1:x"])
def test_unusual_but_valid_ids_work(
    api_client: TestClient, admin: dict[str, str], value: str
) -> None:
    body = {"user_id": value, "agent_id": value, "query": "anything", "dry_run": True}
    assert api_client.post("/v1/search", json=body, headers=admin).status_code == 200
    working = api_client.put(
        f"/v1/sessions/{quote(value, safe='')}/working",
        json={"user_id": value, "agent_id": value, "items": [{"content": "remember 🙂"}]},
        headers=admin,
    )
    assert working.status_code == 200, working.text
    assert working.json()["session_id"] == value


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


EPISODE = {"user_id": "u1", "agent_id": "a1", "session_id": "s1", "role": "user", "content": "hi"}
PAIR = {"user_id": "u1", "agent_id": "a1"}
NUL = "a\x00b"
# (method, path, request kwargs, the field the 422 must name). Each of these was a 500
# (PostgreSQL refuses NUL in text, NUL and NaN in jsonb; deep metadata broke Redis
# serialisation; a 5,000-deep body broke the capture parser) before the input guard.
UNSTORABLE = [
    ("POST", "/v1/search", {"json": {**PAIR, "query": "x", "domains": [NUL]}}, "domains.0"),
    ("GET", "/v1/memories", {"params": {"user_id": "u1", "q": NUL}}, "q"),
    ("GET", "/v1/memories", {"params": {"user_id": "u1", "domain": NUL}}, "domain"),
    ("PUT", "/v1/agents/a1", {"json": {"display_name": NUL}}, "display_name"),
    ("POST", "/v1/tokens", {"json": {"role": "viewer", "name": NUL}}, "name"),
    ("POST", "/v1/episodes", {"json": {**EPISODE, "metadata": {"k": NUL}}}, "metadata.k"),
    ("POST", "/v1/episodes", {"json": {**EPISODE, "metadata": {NUL: 1}}}, "metadata"),
    ("POST", "/v1/episodes", {"json": {**EPISODE, "metadata": {"k": "\ud83d"}}}, "metadata.k"),
    ("POST", "/v1/episodes", {"json": {**EPISODE, "speaker": NUL}}, "speaker"),
    ("POST", "/v1/episodes", {"json": {**EPISODE, "idempotency_key": NUL}}, "idempotency_key"),
    ("POST", "/v1/episodes", {"content": b'{"metadata": {"n": NaN}}'}, "metadata.n"),
    ("POST", "/v1/memories", {"json": {**PAIR, "content": "hi", "tags": [NUL]}}, "tags.0"),
    ("POST", "/v1/memories", {"content": b'{"metadata": {"n": -Infinity}}'}, "metadata.n"),
    ("PATCH", f"/v1/memories/{uuid.UUID(int=1)}", {"json": {**PAIR, "domain": NUL}}, "domain"),
    ("POST", f"/v1/memories/{uuid.UUID(int=1)}/archive", {"params": {"reason": NUL}}, "reason"),
    (
        "PUT",
        "/v1/sessions/s1/working",
        {"json": {**PAIR, "items": [{"content": "x", "speaker": NUL}]}},
        "items.0.speaker",
    ),
    (
        "POST",
        "/v1/memories",
        {"json": {**PAIR, "content": "x", "metadata": _nested(40)}},
        "metadata",
    ),
    (
        "PUT",
        "/v1/sessions/s1/working",
        {"json": {**PAIR, "items": [{"content": "x", "metadata": _nested(300)}]}},
        "items.0.metadata",
    ),
    ("POST", "/v1/episodes", {"content": b"[" * 5000 + b"]" * 5000}, "body"),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "field"), UNSTORABLE)
def test_unstorable_values_are_a_4xx_naming_the_field(
    api_client: TestClient,
    admin: dict[str, str],
    method: str,
    path: str,
    kwargs: dict[str, Any],
    field: str,
) -> None:
    if "json" in kwargs:
        kwargs = {"content": json.dumps(kwargs["json"]).encode()}
    response = api_client.request(method, path, headers=admin, **kwargs)
    _assert_names(response, f"{field}:", (422,))


def test_odd_credentials_are_a_401_or_403(api_client: TestClient, tokens: dict[str, str]) -> None:
    params = {"user_id": "u1"}
    for authorization in (b"Bearer \xe9\xe9", b"Bearer " + b"x" * 10_000, b"Basic abc", b"Bearer"):
        response = api_client.get(
            "/v1/memories", params=params, headers={"Authorization": authorization}
        )
        assert response.status_code == 401, response.text
    tenant_header = {"Authorization": f"Bearer {tokens['agent']}", "X-Muma-Tenant": b"\xe9\x00"}
    response = api_client.get(
        "/v1/memories", params={**params, "agent_id": "a1"}, headers=tenant_header
    )
    assert response.status_code == 403, response.text
