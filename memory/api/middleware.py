"""Per-request observability: a request id (X-Request-ID), the latency histogram per route
template, and one structured access-log line per request.

Invariants: pure ASGI (no BaseHTTPMiddleware), so streaming and server-sent-event
responses pass through untouched; the route label is the matched route's template
(`/v1/memories/{note_id}`), never the raw path, and "unmatched" for 404s, so label
cardinality stays bounded; an incoming X-Request-ID is kept only when it is short and
made of safe characters, otherwise a new one is issued.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.ops.logs import REQUEST_ID
from memory.ops.metrics import observe_request

access_log = logging.getLogger("memory.api.access")
SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
HEADER = "X-Request-ID"


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
