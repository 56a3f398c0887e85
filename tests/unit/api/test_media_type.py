"""A body that is not JSON by its declared type gets 415 naming what to send; JSON, a
`+json` type and a body with no type go through to the route."""

from __future__ import annotations

from fastapi.testclient import TestClient

from memory.api.app import create_app
from memory.api.middleware import media_type_problem


def test_a_form_encoded_capture_is_refused_with_415() -> None:
    client = TestClient(create_app())  # the guard answers before any route or server
    sent = client.post(
        "/v1/episodes",
        content=b"user_id=alice&content=hello",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert sent.status_code == 415
    assert sent.json()["detail"] == (
        "body: send JSON with Content-Type: application/json "
        "(got application/x-www-form-urlencoded)"
    )


def test_json_types_and_untyped_bodies_pass() -> None:
    assert media_type_problem("application/json; charset=utf-8", b"{}") is None
    assert media_type_problem("application/merge-patch+json", b"{}") is None
    assert media_type_problem(None, b"{}") is None
    assert media_type_problem("text/plain", b"") is None  # no body, nothing to read
    assert media_type_problem("text/plain", b"{}") is not None
