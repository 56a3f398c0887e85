"""Bad capture input gets a 4xx naming the field, and nothing is half-written."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.db import session_scope
from memory.episodes.models import Episode
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


def _episode(owner: str, **overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "user_id": owner,
        "agent_id": "a1",
        "session_id": "s1",
        "role": "user",
        "content": "I moved to Lisbon in March.",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": True}
    for _ in range(depth - 1):
        value = {"child": value}
    return value


def _stored(user_id: str) -> int:
    with session_scope() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Episode).where(Episode.user_id == user_id)
            )
            or 0
        )


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"user_id": None}, "user_id"),
        ({"agent_id": "x" * 129}, "agent_id"),
        ({"session_id": "bad\x07id"}, "session_id"),
        ({"session_id": "   "}, "session_id"),
        ({"role": "robot"}, "role"),
        ({"content": "x" * (1024 * 1024 + 1)}, "content"),
        ({"content": ""}, "content"),
        ({"occurred_at": "yesterday-ish"}, "occurred_at"),
        ({"metadata": "not an object"}, "metadata"),
        ({"surprise": 1}, "surprise"),
        # Values PostgreSQL cannot store (text, jsonb): each was a 500 before the guard.
        ({"metadata": {"note": "a\x00b"}}, "metadata.note"),
        ({"metadata": {"n": float("nan")}}, "metadata.n"),
        ({"speaker": "\x00"}, "speaker"),
        ({"content": "half a pair \ud83d"}, "content"),
        ({"metadata": _nested(40)}, "metadata"),
        # Times no database stores: year 10000 and year 0 in UTC (the episode stayed
        # queued for ever, and the tenant's user list and exports answered 500).
        ({"occurred_at": "9999-12-31T23:59:59-14:00"}, "occurred_at"),
        ({"occurred_at": "0001-01-01T00:00:00+14:00"}, "occurred_at"),
        # Numbers JSON consumers cannot read, and metadata every hit would echo.
        ({"metadata": {"n": 2**60}}, "metadata"),
        ({"metadata": {"blob": "x" * 20_000}}, "metadata"),
    ],
)
def test_bad_episode_is_rejected_naming_the_field(
    api_client: TestClient,
    tokens: dict[str, str],
    user_id: str,
    overrides: dict[str, object],
    field: str,
) -> None:
    body = _episode(user_id, **overrides)
    # json.dumps writes NaN and escapes a lone surrogate, as a careless client would.
    headers = {**bearer(tokens["agent"]), "Content-Type": "application/json"}
    response = api_client.post("/v1/episodes", content=json.dumps(body), headers=headers)
    assert response.status_code in (400, 422), response.text
    assert field in response.json()["detail"]
    assert _stored(user_id) == 0


def test_an_integer_too_long_to_parse_is_rejected_naming_the_field(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    headers = {**bearer(tokens["agent"]), "Content-Type": "application/json"}
    body = json.dumps(_episode(user_id)).replace(
        '"content"', f'"metadata": {{"n": {"9" * 4400}}}, "content"'
    )
    response = api_client.post("/v1/episodes", content=body, headers=headers)
    assert response.status_code == 422, response.text[:300]
    assert "metadata" in response.json()["detail"]
    digits_as_content = json.dumps(_episode(user_id)).replace(
        '"I moved to Lisbon in March."', "9" * 40
    )
    response = api_client.post("/v1/episodes", content=digits_as_content, headers=headers)
    assert response.status_code == 422 and "content" in response.json()["detail"]
    assert _stored(user_id) == 0


def test_a_bad_item_is_rejected_alone_and_its_batch_is_stored(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    body = {"episodes": [_episode(user_id), _episode(user_id, role="narrator"), _episode(user_id)]}
    response = api_client.post("/v1/episodes", json=body, headers=bearer(tokens["agent"]))
    assert response.status_code == 202, response.text
    answer = response.json()
    ids = answer["episode_ids"]
    assert ids[1] is None and ids[0] and ids[2]
    [rejected] = answer["rejected"]
    assert rejected["index"] == 1 and "episodes.1.role" in rejected["detail"]
    assert rejected["fields"][0]["field"] == "episodes.1.role"
    assert _stored(user_id) == 2


def test_a_batch_with_no_valid_item_stores_nothing(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    bad = [_episode(user_id, role="narrator"), _episode(user_id, content=" ")]
    response = api_client.post("/v1/episodes", json={"episodes": bad},
                               headers=bearer(tokens["agent"]))  # fmt: skip
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "episodes.0.role" in detail and "episodes.1.content" in detail
    assert _stored(user_id) == 0


def test_more_than_500_episodes_is_rejected(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    body = {"episodes": [_episode(user_id, content=f"fact {i}") for i in range(501)]}
    response = api_client.post("/v1/episodes", json=body, headers=bearer(tokens["agent"]))
    assert response.status_code == 422 and "episodes" in response.json()["detail"]
    assert _stored(user_id) == 0


def test_the_batch_limit_setting_is_enforced(
    api_client: TestClient, tokens: dict[str, str], user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.config import reset_settings_cache

    monkeypatch.setenv("MUMA_API__MAX_BATCH", "3")
    reset_settings_cache()
    try:
        body = {"episodes": [_episode(user_id, content=f"fact {i}") for i in range(4)]}
        response = api_client.post("/v1/episodes", json=body, headers=bearer(tokens["agent"]))
        assert response.status_code == 422, response.text
        assert "at most 3 items" in response.text and _stored(user_id) == 0
        body["episodes"] = body["episodes"][:3]
        accepted = api_client.post("/v1/episodes", json=body, headers=bearer(tokens["agent"]))
        assert accepted.status_code in (200, 202), accepted.text
    finally:
        monkeypatch.delenv("MUMA_API__MAX_BATCH")
        reset_settings_cache()


def test_malformed_json_and_empty_batch(api_client: TestClient, tokens: dict[str, str]) -> None:
    headers = {**bearer(tokens["agent"]), "Content-Type": "application/json"}
    malformed = api_client.post("/v1/episodes", content=b'{"episodes": [', headers=headers)
    assert malformed.status_code in (400, 422) and "JSON" in malformed.json()["detail"]
    empty = api_client.post("/v1/episodes", json={"episodes": []}, headers=headers)
    assert empty.status_code == 422
    not_object = api_client.post("/v1/episodes", json=[1, 2], headers=headers)
    assert not_object.status_code == 422


def test_huge_body_is_refused_before_parsing(
    api_client: TestClient, tokens: dict[str, str]
) -> None:
    headers = {**bearer(tokens["agent"]), "Content-Type": "application/json"}
    response = api_client.post(
        "/v1/episodes", content=b"[" + b" " * (9 * 1024 * 1024) + b"]", headers=headers
    )
    assert response.status_code == 413


def test_viewer_cannot_capture(
    api_client: TestClient, tokens: dict[str, str], user_id: str
) -> None:
    response = api_client.post(
        "/v1/episodes", json=_episode(user_id), headers=bearer(tokens["viewer"])
    )
    assert response.status_code == 403
    assert _stored(user_id) == 0


def test_user_bound_token_cannot_write_for_another_user(
    api_client: TestClient, tenant_id: str, user_id: str
) -> None:
    from tests.conftest import make_token

    token = make_token("agent", tenant_id, user="someone-else")
    response = api_client.post("/v1/episodes", json=_episode(user_id), headers=bearer(token))
    assert response.status_code == 403


def test_capture_checks_the_token_before_the_body(
    api_client: TestClient, tokens: dict[str, str]
) -> None:
    """The token is checked before the body is read as JSON: no body, however broken, is
    looked at for a caller without a valid token for this tenant."""
    broken = b'{"episodes": ['
    for headers in ({}, bearer("not-a-token"), {"Authorization": "Basic abc"}):
        answer = api_client.post("/v1/episodes", content=broken, headers=headers)
        assert answer.status_code == 401, answer.text
    other_tenant = {**bearer(tokens["agent"]), "X-Muma-Tenant": "someone-else"}
    answer = api_client.post("/v1/episodes", content=broken, headers=other_tenant)
    assert answer.status_code == 403, answer.text
    answer = api_client.post("/v1/episodes", content=broken, headers=bearer(tokens["agent"]))
    assert answer.status_code in (400, 422) and "JSON" in answer.json()["detail"]
