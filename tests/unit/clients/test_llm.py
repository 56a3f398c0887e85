"""LlmClient through the real openai client against tests/support/fake_openai.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memory.clients import llm
from memory.clients.llm import LlmClient, LlmOutputError, parse_json_output, validate_json
from memory.config import LlmSettings, Settings
from memory.errors import ConfigError, InvalidInputError, TransientError
from tests.support.fake_openai import FakeOpenAI, unused_base_url

FACTS = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": ["stable", "episodic"]},
                    "importance": {"type": "number"},
                },
                "required": ["text", "kind"],
            },
        },
    },
    "required": ["facts"],
}
GOOD = json.dumps({"facts": [{"text": "Alice lives in Berlin", "kind": "stable"}]})


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def client_for(server: FakeOpenAI, timeout: float = 5.0) -> LlmClient:
    return LlmClient(base_url=server.base_url, api_key="sk-test", model="tiny", timeout=timeout)


def extract(client: LlmClient) -> dict[str, Any]:
    return client.complete_json("Extract facts.", "Alice: I live in Berlin.", FACTS, name="extract")


# ------------------------------------------------------------------ JSON helpers


@pytest.mark.parametrize(
    ("value", "schema", "fragment"),
    [
        (True, {"type": "integer"}, "expected integer"),
        (1.5, {"type": "integer"}, "expected integer"),
        ("x", {"type": ["number", "null"]}, "expected number|null"),
        ("maybe", {"type": "string", "enum": ["yes", "no"]}, "not one of"),
        ({}, {"type": "object", "required": ["a"]}, "missing required 'a'"),
        (
            {"a": 1, "b": 2},
            {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
            "unexpected property 'b'",
        ),
        ([1, "2"], {"type": "array", "items": {"type": "integer"}}, "$[1]: expected integer"),
        ([], {"type": "array", "minItems": 1}, "fewer than 1"),
    ],
)
def test_validate_json_reports_violations(value: Any, schema: dict, fragment: str) -> None:
    errors = validate_json(value, schema)
    assert any(fragment in e for e in errors), errors


def test_validate_json_accepts_valid_nested_values() -> None:
    value = {"facts": [{"text": "t", "kind": "stable", "importance": 2}]}
    assert validate_json(value, FACTS) == []
    assert validate_json(3.0, {"type": "integer"}) == []
    assert validate_json(None, {"type": ["string", "null"]}) == []


@pytest.mark.parametrize(
    "content",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        '<think>the user wants {"a": 2}? no</think>\n{"a": 1}',
        'Sure! Here is the JSON: {"a": 1} Hope that helps.',
    ],
)
def test_parse_json_output_is_lenient_about_wrapping(content: str) -> None:
    assert parse_json_output(content) == {"a": 1}


@pytest.mark.parametrize("content", ["", None, "no json here", '{"a": '])
def test_parse_json_output_rejects_non_json(content: str | None) -> None:
    with pytest.raises(ValueError):
        parse_json_output(content)


# ------------------------------------------------------------------ complete_json


def test_good_json_is_returned_and_request_is_well_formed(fake: FakeOpenAI) -> None:
    fake.reply(GOOD)
    assert extract(client_for(fake)) == json.loads(GOOD)
    (body,) = fake.chat_requests
    assert body["model"] == "tiny" and body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == FACTS
    system, user = body["messages"]
    # the schema is stated in the prompt too, for servers that ignore response_format
    assert system["role"] == "system" and '"required":["facts"]' in system["content"]
    assert user == {"role": "user", "content": "Alice: I live in Berlin."}
    assert fake.requests[0].headers["authorization"] == "Bearer sk-test"


def test_invalid_json_is_repaired_once(fake: FakeOpenAI) -> None:
    fake.reply("facts: Alice lives in Berlin", GOOD)
    assert extract(client_for(fake)) == json.loads(GOOD)
    first, second = fake.chat_requests
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {"role": "assistant", "content": "facts: Alice lives in Berlin"}
    assert "not valid JSON" in second["messages"][3]["content"]


def test_schema_violation_is_repaired_with_the_errors_named(fake: FakeOpenAI) -> None:
    fake.reply('{"facts": [{"text": "Alice lives in Berlin", "kind": "forever"}]}', GOOD)
    assert extract(client_for(fake)) == json.loads(GOOD)
    repair = fake.chat_requests[1]["messages"][-1]["content"]
    assert "$.facts[0].kind" in repair and "not one of" in repair


def test_twice_invalid_raises_with_raw_output_and_stops(fake: FakeOpenAI) -> None:
    fake.reply("not json", '{"facts": "still wrong"}', GOOD)
    with pytest.raises(LlmOutputError) as caught:
        extract(client_for(fake))
    error = caught.value
    assert isinstance(error, InvalidInputError)
    assert error.raw_output == '{"facts": "still wrong"}'
    assert error.attempts == ["not json", '{"facts": "still wrong"}']
    assert error.ids["schema"] == "extract"
    assert len(fake.chat_requests) == 2 and fake.pending == 1  # exactly one repair


def test_empty_content_counts_as_invalid(fake: FakeOpenAI) -> None:
    fake.reply("", GOOD)
    assert extract(client_for(fake)) == json.loads(GOOD)
    assert "empty" in fake.chat_requests[1]["messages"][-1]["content"]


def test_server_down_is_transient() -> None:
    client = LlmClient(base_url=unused_base_url(), api_key=None, model="tiny")
    with pytest.raises(TransientError, match="unreachable"):
        extract(client)


def test_timeout_is_transient() -> None:
    with FakeOpenAI(delay_seconds=1.0) as server:
        server.reply(GOOD)
        with pytest.raises(TransientError):
            extract(client_for(server, timeout=0.2))


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, TransientError),
        (503, TransientError),
        (429, TransientError),
        (401, ConfigError),
        (404, ConfigError),
        (422, InvalidInputError),
    ],
)
def test_http_errors_map_to_domain_errors(fake: FakeOpenAI, status: int, error: type) -> None:
    fake.fail(status)
    with pytest.raises(error) as caught:
        extract(client_for(fake))
    assert type(caught.value) is error and caught.value.ids["status"] == status
    assert len(fake.chat_requests) == 1  # the client never retries on its own


def test_rejected_response_format_falls_back_to_prompt_only(fake: FakeOpenAI) -> None:
    fake.fail(400, "unsupported parameter: response_format").reply(GOOD, GOOD)
    client = client_for(fake)
    assert extract(client) == json.loads(GOOD)
    assert extract(client) == json.loads(GOOD)
    first, retried, later = fake.chat_requests
    assert "response_format" in first
    assert "response_format" not in retried and "response_format" not in later


def test_rejected_temperature_is_dropped_but_response_format_kept(fake: FakeOpenAI) -> None:
    fake.fail(400, "Unsupported value: 'temperature' does not support 0.0").reply(GOOD)
    assert extract(client_for(fake)) == json.loads(GOOD)
    first, retried = fake.chat_requests
    assert first["temperature"] == 0.0 and "temperature" not in retried
    assert "response_format" in retried


def test_other_bad_requests_are_not_retried(fake: FakeOpenAI) -> None:
    fake.fail(400, "context length exceeded")
    with pytest.raises(InvalidInputError):
        extract(client_for(fake))
    assert len(fake.chat_requests) == 1


# ------------------------------------------------------------------ configuration


def settings_with(base_url: str | None) -> Settings:
    return Settings(llm=LlmSettings(base_url=base_url, model="tiny", timeout_seconds=3))


def test_unconfigured_llm_has_no_client_and_a_healthy_check() -> None:
    settings = settings_with(None)
    assert llm.is_configured(settings) is False
    assert llm.get_llm_client(settings) is None
    report = llm.check_llm(settings)
    assert report["configured"] is False and report["ok"] is True and report["error"] is None


def test_configured_client_is_shared_and_checked(fake: FakeOpenAI) -> None:
    settings = settings_with(fake.base_url)
    client = llm.get_llm_client(settings)
    assert isinstance(client, LlmClient) and llm.get_llm_client(settings) is client
    assert client.model == "tiny"
    fake.reply('{"ok": true}')
    report = llm.check_llm(settings)
    assert report["ok"] is True and report["ms"] >= 0 and report["model"] == "tiny"
    assert fake.requests[-1].headers["authorization"] == "Bearer sk-none"


def test_check_llm_reports_an_unreachable_server() -> None:
    report = llm.check_llm(settings_with(unused_base_url()))
    assert report["configured"] is True and report["ok"] is False
    assert report["error"].startswith("TransientError")
