"""The OpenAPI document says what the API does: a valid document, the token as a security
scheme, every referenced schema present, the read path's answers described."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openapi_spec_validator import validate

from memory.api.app import create_app


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return create_app().openapi()


def test_the_document_is_valid_openapi(spec: dict[str, Any]) -> None:
    validate(spec)


def test_every_reference_resolves(spec: dict[str, Any]) -> None:
    named = set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(spec)))
    assert named - set(spec["components"]["schemas"]) == set()
    assert {"EpisodeBatch", "EpisodeIn"} <= named  # the capture body, read by hand


def test_the_token_is_a_security_scheme_not_a_header_parameter(spec: dict[str, Any]) -> None:
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
            assert "authorization" not in headers, (method, path)
            if path not in ("/healthz",) and not path.startswith("/dashboard"):
                assert operation.get("security") == [{"bearerAuth": []}], (method, path)


@pytest.mark.parametrize(
    ("path", "model"), [("/v1/search", "SearchAnswer"), ("/v1/context", "ContextAnswer")]
)
def test_the_read_paths_answers_are_described(spec: dict[str, Any], path: str, model: str) -> None:
    answer = spec["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]
    assert answer["schema"] == {"$ref": f"#/components/schemas/{model}"}
