"""Bad read requests get a 422 naming the field, before any ranking: queries and prompts
of only whitespace, a time window that ends before it starts, a query that is too long."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from memory.cli.main import cli
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


@pytest.fixture()
def caller(api_client: TestClient) -> tuple[TestClient, dict[str, str], str]:
    from tests.conftest import make_token

    headers = bearer(make_token("agent", f"t-{uuid.uuid4().hex[:8]}"))
    return api_client, headers, f"u-{uuid.uuid4().hex[:8]}"


def _refused(response, field: str) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 422, response.text
    body = response.json()
    assert [p["field"] for p in body["fields"]] == [field], body
    assert body["detail"].startswith(f"{field}: "), body
    return body["detail"]


def test_a_body_field_called_query_is_named_as_itself(caller: tuple) -> None:
    client, headers, user = caller
    base = {"user_id": user, "agent_id": "main"}
    too_long = client.post("/v1/search", json={**base, "query": "x" * 4001}, headers=headers)
    assert "at most 4000 characters" in _refused(too_long, "query")
    empty = client.post("/v1/search", json={**base, "query": ""}, headers=headers)
    _refused(empty, "query")


@pytest.mark.parametrize(
    ("path", "field", "extra"),
    [
        ("/v1/search", "query", {}),
        ("/v1/context", "prompt", {"session_id": "s1"}),
        ("/v1/agents/search", "query", {}),
    ],
)
def test_a_blank_query_or_prompt_is_refused(
    caller: tuple, path: str, field: str, extra: dict[str, str]
) -> None:
    client, headers, user = caller
    body = {"user_id": user, "agent_id": "main", field: " \n\t ", **extra}
    assert "must not be blank" in _refused(client.post(path, json=body, headers=headers), field)


def test_until_before_since_is_refused_and_equal_bounds_are_a_point_in_time(
    caller: tuple,
) -> None:
    client, headers, user = caller
    base = {"user_id": user, "agent_id": "main", "query": "anything"}
    backwards = client.post(
        "/v1/search",
        json={**base, "since": "2024-06-01T00:00:00Z", "until": "2024-01-01T00:00:00Z"},
        headers=headers,
    )
    assert "must not be before since" in _refused(backwards, "until")
    # A time without a zone is UTC: 02:00+02:00 is midnight UTC, before a naive 01:00.
    mixed = client.post(
        "/v1/search",
        json={**base, "since": "2024-01-01T01:00:00", "until": "2024-01-01T02:00:00+02:00"},
        headers=headers,
    )
    _refused(mixed, "until")
    point = client.post(
        "/v1/search",
        json={**base, "since": "2024-01-01T00:00:00", "until": "2024-01-01T00:00:00Z"},
        headers=headers,
    )
    assert point.status_code == 200, point.text


def test_the_cli_refuses_a_blank_query() -> None:
    result = CliRunner().invoke(cli, ["search", "--user", "alice", "   "])
    assert result.exit_code == 2, result.output
    assert "QUERY" in result.output and "must not be blank" in result.output


def test_a_time_no_database_stores_is_refused_by_search_and_browse(caller: tuple) -> None:
    client, headers, user = caller
    base = {"user_id": user, "agent_id": "main", "query": "lisbon"}
    for field, value in (
        ("until", "9999-12-31T23:59:59-14:00"),
        ("since", "0001-01-01T00:00:00+14:00"),
    ):
        found = client.post("/v1/search", json={**base, field: value}, headers=headers)
        assert "years 1 and 9999" in _refused(found, field)
    browsed = client.get(
        "/v1/memories",
        params={"user_id": user, "agent_id": "main", "until": "9999-12-31T23:59:59-14:00"},
        headers=headers,
    )
    assert browsed.status_code == 422 and "until" in browsed.json()["detail"], browsed.text


def test_an_export_names_any_user_in_its_file_name(api_client: TestClient) -> None:
    from tests.conftest import make_token

    tenant, user = f"t-{uuid.uuid4().hex[:8]}", "用户-ü"
    turn = {"user_id": user, "agent_id": "main", "session_id": "s", "role": "user",
            "content": "我住在里斯本。"}  # fmt: skip
    captured = api_client.post(
        "/v1/episodes", json=turn, headers=bearer(make_token("agent", tenant))
    )
    assert captured.status_code == 202, captured.text
    headers = bearer(make_token("viewer", tenant))
    response = api_client.get("/v1/export", params={"user_id": user}, headers=headers)
    assert response.status_code == 200, response.text[:300]
    disposition = response.headers["content-disposition"]
    assert 'filename="muma-__-_.jsonl"' in disposition
    assert "filename*=UTF-8''muma-%E7%94%A8%E6%88%B7-%C3%BC.jsonl" in disposition
