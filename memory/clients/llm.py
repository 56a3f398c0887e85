"""Optional LLM client for any OpenAI-compatible chat endpoint (DESIGN.md §4, §9).

Invariants:
- `complete_json` returns a dict that validates against the given schema, or raises:
  LlmOutputError (after exactly one repair attempt, with the raw output kept),
  TransientError (connection errors, timeouts, 408/409/429/5xx: worth retrying later), or
  ConfigError (401/403/404: the endpoint, key or model is wrong).
- The client itself never retries; retries with backoff belong to the Celery task.
- Without `llm.base_url` there is no client (`get_llm_client` returns None) and every
  stage falls back to its deterministic path.
"""

from __future__ import annotations

import json
import re
import time
from functools import lru_cache
from typing import Any

import openai

from memory.config import Settings, get_settings
from memory.errors import ConfigError, InvalidInputError, MemoryServiceError, TransientError

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_TRANSIENT_STATUS = {408, 409, 425, 429}


class LlmOutputError(InvalidInputError):
    """The model's output was not valid JSON for the schema, even after one repair.

    `raw_output` is the last answer, `attempts` every answer, for the dead-letter record.
    """

    def __init__(self, message: str, *, raw_output: str, attempts: list[str], **ids: Any) -> None:
        super().__init__(message, **ids)
        self.raw_output = raw_output
        self.attempts = attempts


def translate_openai_error(exc: Exception, what: str) -> MemoryServiceError:
    """Map an openai exception to the domain error that says whether a retry can help."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return TransientError(f"{what} unreachable: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in _TRANSIENT_STATUS:
            return TransientError(f"{what} answered {status}: {exc.message}", status=status)
        if status in (401, 403, 404):
            return ConfigError(f"{what} answered {status}: {exc.message}", status=status)
        return InvalidInputError(f"{what} answered {status}: {exc.message}", status=status)
    return TransientError(f"{what} failed: {exc}")


# ------------------------------------------------------------------ JSON handling


def parse_json_output(content: str | None) -> Any:
    """Parse a model answer leniently: drops <think> blocks, code fences and any prose
    around the first JSON object or array. Raises ValueError when nothing parses."""
    if not content or not content.strip():
        raise ValueError("the answer was empty")
    text = _THINK.sub("", content).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        try:
            return json.JSONDecoder().raw_decode(text, min(starts))[0]
        except json.JSONDecodeError:
            pass
    raise ValueError(f"not valid JSON: {first_error}")


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "number": (int, float),
    "integer": (int,),
    "null": (type(None),),
}


def _type_ok(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("number", "integer"):
        return False  # bool is an int in Python but not in JSON
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def validate_json(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Errors of `value` against a JSON-schema subset: type (name or list), enum, required,
    properties, additionalProperties (bool), items, minItems, maxItems. [] means valid."""
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_type_ok(value, n) for n in names):
            return [f"{path}: expected {'|'.join(names)}, got {type(value).__name__}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [
            f"{path}: missing required {k!r}" for k in schema.get("required", []) if k not in value
        ]
        for key, item in value.items():
            if key in props:
                errors += validate_json(item, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {key!r}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += validate_json(item, schema["items"], f"{path}[{i}]")
    return errors


def _check(content: str | None, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """(parsed value, None) when valid, else (None, what is wrong)."""
    try:
        value = parse_json_output(content)
    except ValueError as exc:
        return None, str(exc)
    errors = validate_json(value, schema)
    return (value, None) if not errors else (None, "; ".join(errors[:10]))


# ------------------------------------------------------------------ client


class LlmClient:
    """Chat completions that must answer JSON matching a schema."""

    def __init__(
        self, *, base_url: str, api_key: str | None, model: str, timeout: float = 30.0
    ) -> None:
        self.base_url = base_url
        self.model = model
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "sk-none", timeout=timeout, max_retries=0
        )
        # Optional request parameters some servers refuse with a 400 (response_format on
        # older local servers, temperature on reasoning models). After one refusal naming a
        # parameter it is no longer sent; the schema is stated in the prompt regardless.
        self._dropped: set[str] = set()

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        name: str,
        temperature: float = 0.0,
    ) -> dict[str, Any]:
        """Ask for JSON matching `schema`; one repair round on invalid output, then raise."""
        messages: list[dict[str, str]] = [
            {"role": "system", "content": _with_schema(system, schema)},
            {"role": "user", "content": user},
        ]
        attempts: list[str] = []
        problem: str | None = None
        for round_ in range(2):
            content = self._chat(messages, schema, name, temperature)
            attempts.append(content)
            value, problem = _check(content, schema)
            if problem is None:
                return value
            if round_ == 0:
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": _repair_prompt(problem)},
                ]
        raise LlmOutputError(
            f"LLM output for {name!r} is invalid after one repair: {problem}",
            raw_output=attempts[-1],
            attempts=attempts,
            schema=name,
        )

    def _chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any], name: str, temp: float
    ) -> str:
        safe = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "output"
        optional: dict[str, Any] = {
            "temperature": temp,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": safe, "schema": schema, "strict": False},
            },
        }
        kwargs = {k: v for k, v in optional.items() if k not in self._dropped}
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                **kwargs,  # type: ignore[arg-type]
            )
        except openai.BadRequestError as exc:
            refused = [k for k in kwargs if k in str(exc)]
            if not refused:
                raise translate_openai_error(exc, f"LLM at {self.base_url}") from exc
            self._dropped.update(refused)
            return self._chat(messages, schema, name, temp)
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc, f"LLM at {self.base_url}") from exc
        if not response.choices:
            return ""
        return response.choices[0].message.content or ""


def _with_schema(system: str, schema: dict[str, Any]) -> str:
    # Stated in the prompt too: many local servers silently ignore response_format.
    return (
        f"{system}\n\nAnswer with a single JSON value and nothing else (no prose, no code "
        f"fences). It must match this JSON schema:\n{json.dumps(schema, separators=(',', ':'))}"
    )


def _repair_prompt(problem: str) -> str:
    return (
        f"Your previous answer is not valid: {problem}. Reply again with only the corrected "
        "JSON that matches the schema."
    )


def is_configured(settings: Settings | None = None) -> bool:
    return (settings or get_settings()).llm.configured


def get_llm_client(settings: Settings | None = None) -> LlmClient | None:
    """The process-wide client for `settings`, or None when no LLM is configured."""
    cfg = (settings or get_settings()).llm
    if not cfg.configured or cfg.base_url is None:
        return None
    return _build_client(cfg.base_url, cfg.api_key, cfg.model, cfg.timeout_seconds)


@lru_cache(maxsize=8)
def _build_client(base_url: str, api_key: str | None, model: str, timeout: float) -> LlmClient:
    return LlmClient(base_url=base_url, api_key=api_key, model=model, timeout=timeout)


_PING_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def check_llm(settings: Settings | None = None) -> dict[str, Any]:
    """For `muma doctor`: {configured, base_url, model, ok, error, ms}; never raises.

    An unconfigured LLM is ok: every stage has a deterministic fallback.
    """
    cfg = (settings or get_settings()).llm
    report: dict[str, Any] = {
        "configured": cfg.configured,
        "base_url": cfg.base_url,
        "model": cfg.model,
        "ok": True,
        "error": None,
        "ms": None,
    }
    client = get_llm_client(settings)
    if client is None:
        return report
    started = time.perf_counter()
    try:
        client.complete_json(
            "You are a health check.", 'Answer {"ok": true}.', _PING_SCHEMA, name="health_check"
        )
    except Exception as exc:  # doctor reports every failure instead of crashing
        report.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    report["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return report
