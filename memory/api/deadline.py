"""Every request answered within its budget, whatever stalls beneath it.

Invariants: an HTTP response starts within its budget plus `api.deadline_margin_ms`.
The budget is `api.request_timeout_ms` from the moment the request's body is in (a slow
upload is not the service's time), or what a route derives from its own body, counted
from the request's arrival (/v1/context: its `timeout_ms`). Past it the client gets the
route's late answer (503 with Retry-After unless the route has its own) and anything the
route sends afterwards is dropped: the route's work runs on in its thread and is
discarded, so a frozen database, a full connection pool or a thread pool taken by stuck
requests costs threads, never a client's wait. A response that has started is never
cut, so exports and event streams flow as long as they last. Exempt paths keep limits of
their own (/healthz) or none (/v1/events). Pure ASGI, like the other middleware.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.api.middleware import ARRIVED_AT
from memory.config import get_settings
from memory.errors import TransientError

log = logging.getLogger(__name__)
EXEMPT_PATHS = ("/healthz", "/v1/events")


@dataclass(frozen=True)
class RouteBudget:
    """A route's own budget: `budget_ms(body)` from the request's body, `late(arrived)`
    the answer sent when it passes (`arrived`: time.monotonic() at arrival)."""

    budget_ms: Callable[[bytes], int]
    late: Callable[[float], Response]


def unavailable(budget_ms: int) -> JSONResponse:
    """The answer to a request whose route did not answer within `budget_ms`."""
    wait = TransientError.retry_after_seconds
    error = TransientError(
        f"no answer within {budget_ms} ms (api.request_timeout_ms): the database or "
        f"Redis is slow or down; send the request again after {wait} s"
    )
    headers = {"Retry-After": str(error.retry_after_seconds)}
    return JSONResponse(error.to_dict(), status_code=error.status_code, headers=headers)


class RequestDeadlineMiddleware:
    def __init__(self, app: ASGIApp, routes: dict[str, RouteBudget] | None = None) -> None:
        self.app = app
        self.routes = routes or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(EXEMPT_PATHS):
            await self.app(scope, receive, send)
            return
        api = get_settings().api
        route = self.routes.get(scope["path"])
        if route is None:
            arrived, budget_ms = time.monotonic(), api.request_timeout_ms
        else:
            arrived = scope.get("state", {}).get(ARRIVED_AT) or time.monotonic()
            body, receive = await _buffered(receive)
            budget_ms = route.budget_ms(body)
        answered = _Answered(send)
        # The margin's first half covers the route's own late answer; the second, ours.
        fire_at = arrived + (budget_ms + api.deadline_margin_ms / 2) / 1000
        task = asyncio.ensure_future(self.app(scope, receive, answered.send))
        try:
            await asyncio.wait_for(asyncio.shield(task), max(0.0, fire_at - time.monotonic()))
            return
        except TimeoutError:
            if answered.started:  # a response under way (a stream) is never cut
                await task
                return
        answered.abandoned = True
        task.add_done_callback(_report_late_failure)
        late = route.late(arrived) if route else unavailable(budget_ms)
        log.warning("%s %s: no answer within %d ms", scope["method"], scope["path"], budget_ms)
        await late(scope, receive, send)


class _Answered:
    """The route's `send`: passes its messages on until the request is abandoned."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.abandoned = False

    async def send(self, message: Message) -> None:
        if self.abandoned:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body, and a `receive` that hands it on unchanged."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", receive  # the client went away: the route sees it as it would
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return body, replay


def _report_late_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("an abandoned request failed later: %r", task.exception())
