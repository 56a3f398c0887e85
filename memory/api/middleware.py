"""Per-request middleware: observability, and the guard on what a request may carry.

Observability: a request id (X-Request-ID), the latency histogram per route template,
one structured access-log line per request, and the request's arrival time (budgets such
as /v1/context's count from it, not from when a thread got to the handler).

Invariants: pure ASGI (no BaseHTTPMiddleware), so streaming and server-sent-event
responses pass through untouched; the route label is the matched route's template
(`/v1/memories/{note_id}`), never the raw path, and "unmatched" for 404s, so label
cardinality stays bounded; an incoming X-Request-ID is kept only when it is short and
made of safe characters, otherwise a new one is issued.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.ops.logs import REQUEST_ID
from memory.ops.metrics import observe_request

access_log = logging.getLogger("memory.api.access")
SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
HEADER = "X-Request-ID"
# request.state key: time.monotonic() when the request reached the app, before its body
# was read, its token checked or a thread picked it up (budgets count from here).
ARRIVED_AT = "arrived_at"


def arrived_at(request: Request) -> float:
    """When the request reached the app (now, for a request this middleware did not see)."""
    value = getattr(request.state, ARRIVED_AT, None)
    return value if isinstance(value, float) else time.monotonic()


def request_id_from(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            candidate = value.decode("latin-1")
            if SAFE_REQUEST_ID.match(candidate):
                return candidate
    return uuid.uuid4().hex


def route_template(scope: Scope) -> str:
    """The matched route's path template; a matched route without parameters (FastAPI's
    own /docs, /openapi.json set no scope["route"]) is its own template."""
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    if scope.get("endpoint") is not None and not scope.get("path_params"):
        return str(scope["path"])
    return "unmatched"


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[ARRIVED_AT] = time.monotonic()
        request_id = request_id_from(scope)
        token = REQUEST_ID.set(request_id)
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message).append(HEADER, request_id)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = route_template(scope)
            observe_request(scope["method"], route, status, elapsed)
            access_log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "route": route,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
            REQUEST_ID.reset(token)


# A JSON escape that may decode to NUL or to half of a surrogate pair.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


# Python's json accepts these non-standard literals; jsonb does not.
_NON_FINITE = (b"NaN", b"Infinity")


# NUL or a lone surrogate (json.loads pairs valid ones): PostgreSQL stores neither.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(text: str) -> bool:
    return _UNSTORABLE.search(text) is not None


def query_problem(query_string: bytes) -> str | None:
    """The first query parameter holding a NUL character, as "<name>: <why>"."""
    if b"%00" not in query_string.lower() and b"\x00" not in query_string:
        return None
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            field = name if "\x00" not in name else "query"
            return f"{field}: must not contain NUL characters"
    return None


def json_problem(body: bytes) -> str | None:
    """The first value (or key) of a JSON body that cannot be stored, as "<path>: <why>":
    a string with NUL or a lone surrogate, or NaN/Infinity.

    Only bodies holding a suspect escape or literal are parsed; one that does not parse
    is left to the route, which reports it as malformed.
    """
    escaped = b"\\u" in body and _SUSPECT_ESCAPE.search(body) is not None
    if not escaped and not any(literal in body for literal in _NON_FINITE):
        return None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[list[str], Any]] = [([], document)]
    while stack:  # iterative: a deeply nested body must not exhaust the Python stack
        path, value = stack.pop()
        where = ".".join(path) or "body"
        if isinstance(value, str) and _unstorable(value):
            return f"{where}: must not contain NUL characters or lone surrogates"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where}: must be a finite number"
        if isinstance(value, dict):
            for key, item in value.items():
                if _unstorable(key):
                    return f"{where}: keys must not contain NUL characters or lone surrogates"
                stack.append(([*path, key], item))
        elif isinstance(value, list):
            stack.extend(([*path, str(i)], item) for i, item in enumerate(value))
    return None


def media_type_problem(content_type: str | None, body: bytes) -> str | None:
    """Why a body is not JSON by its declared type (every route reads JSON), or None; a
    body without a Content-Type is read as JSON."""
    if not body or content_type is None:
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return None
    return f"body: send JSON with Content-Type: application/json (got {media or 'no type'})"


def _refusal(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"error": "InvalidInputError", "detail": detail}, status_code=status)


def _too_large(limit: int) -> JSONResponse:
    # Built only for a refused request: every request used to build (and discard) one.
    return _refusal(413, f"body: larger than {limit} bytes")


class InputGuardMiddleware:
    """What a request may carry, checked before any route runs.

    Invariants: a body over api.max_body_bytes gets 413, by its Content-Length before a
    byte is read, else by counting while it is read (chunked, or a lying header); a NUL
    character in the query string, or a NUL, lone surrogate or NaN/Infinity anywhere in a
    JSON body, gets 422 naming the field, since PostgreSQL cannot store them and the
    request would otherwise end in a 500 deep inside a route; a body declared as another
    type than JSON gets 415. The body is buffered
    (every route reads it whole anyway) and handed on unchanged. Pure ASGI: responses
    stream untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from memory.config import get_settings

        limit = get_settings().api.max_body_bytes
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _too_large(limit)(scope, receive, send)
            return
        problem = query_problem(scope.get("query_string", b""))
        if problem is not None:
            await _refusal(422, problem)(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before sending its body
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await _too_large(limit)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        wrong_type = media_type_problem(Headers(scope=scope).get("content-type"), body)
        if wrong_type is not None:
            await _refusal(415, wrong_type)(scope, receive, send)
            return
        problem = json_problem(body)
        if problem is not None:
            await _refusal(422, problem)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands over the buffered body once, then the client's own messages."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
