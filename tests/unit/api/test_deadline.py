"""The request deadline: an answer within the budget whatever the route does, a started
response never cut, a route's own late answer, the abandoned route's output dropped."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, StreamingResponse

from memory.api.deadline import RequestDeadlineMiddleware, RouteBudget
from memory.api.middleware import ObservabilityMiddleware
from memory.api.routes.context import context_budget_ms
from memory.config import reset_settings_cache


@pytest.fixture(autouse=True)
def budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MUMA_API__REQUEST_TIMEOUT_MS", "300")
    monkeypatch.setenv("MUMA_API__DEADLINE_MARGIN_MS", "100")
    reset_settings_cache()
    yield
    reset_settings_cache()


def _app(release: threading.Event, finished: list[str]) -> FastAPI:
    app = FastAPI()

    @app.get("/stuck")
    def stuck() -> dict[str, str]:  # a sync route: it holds a request thread
        release.wait(10)
        finished.append("stuck")
        return {"late": "answer"}

    @app.get("/quick")
    def quick() -> dict[str, str]:
        return {"ok": "yes"}

    @app.get("/stream")
    def stream() -> StreamingResponse:
        def chunks() -> Iterator[bytes]:
            for i in range(4):
                time.sleep(0.15)
                yield f"{i}\n".encode()

        return StreamingResponse(chunks(), media_type="text/plain")

    @app.post("/own")
    def own() -> dict[str, str]:
        release.wait(10)
        return {"late": "answer"}

    def late(arrived: float) -> JSONResponse:
        return JSONResponse(
            {"empty": True, "waited_ms": round((time.monotonic() - arrived) * 1000)}
        )

    routes = {"/own": RouteBudget(budget_ms=lambda body: json.loads(body)["budget"], late=late)}
    app.add_middleware(RequestDeadlineMiddleware, routes=routes)
    app.add_middleware(ObservabilityMiddleware)
    return app


async def _call(
    app: FastAPI, method: str, path: str, **kwargs: object
) -> tuple[httpx.Response, float]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        started = time.monotonic()
        response = await client.request(method, path, **kwargs)  # type: ignore[arg-type]
        return response, time.monotonic() - started


def test_a_stuck_route_is_answered_503_with_retry_after_within_the_budget() -> None:
    release, finished = threading.Event(), []
    app = _app(release, finished)
    response, waited = asyncio.run(_call(app, "GET", "/stuck"))
    release.set()
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "2"
    body = response.json()
    assert body["error"] == "TransientError"
    assert "300 ms (api.request_timeout_ms)" in body["detail"]
    assert 0.3 <= waited < 0.3 + 0.1 + 0.2, waited


def test_the_abandoned_route_runs_on_and_its_answer_is_dropped() -> None:
    release, finished = threading.Event(), []
    app = _app(release, finished)

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        stuck, _ = await _call(app, "GET", "/stuck")
        release.set()
        await asyncio.sleep(0.2)
        quick, _ = await _call(app, "GET", "/quick")
        return stuck, quick

    stuck, quick = asyncio.run(scenario())
    assert stuck.status_code == 503 and "late" not in stuck.text
    assert finished == ["stuck"]
    assert quick.status_code == 200 and quick.json() == {"ok": "yes"}


def test_a_quick_route_is_untouched() -> None:
    response, _ = asyncio.run(_call(_app(threading.Event(), []), "GET", "/quick"))
    assert response.status_code == 200 and response.json() == {"ok": "yes"}
    assert response.headers["X-Request-ID"]


def test_a_started_response_is_never_cut() -> None:
    response, waited = asyncio.run(_call(_app(threading.Event(), []), "GET", "/stream"))
    assert response.status_code == 200
    assert response.text == "0\n1\n2\n3\n"
    assert waited >= 0.6


def test_a_route_budget_comes_from_its_body_and_its_own_late_answer_is_sent() -> None:
    release = threading.Event()
    app = _app(release, [])
    response, waited = asyncio.run(_call(app, "POST", "/own", json={"budget": 120}))
    release.set()
    assert response.status_code == 200
    assert response.json()["empty"] is True
    assert 0.12 <= waited < 0.12 + 0.1 + 0.2, waited


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"prompt": "x", "timeout_ms": 400}', 400),
        (b'{"prompt": "x"}', 150),
        (b'{"prompt": "x", "timeout_ms": 0}', 150),
        (b'{"prompt": "x", "timeout_ms": true}', 150),
        (b'{"prompt": "x", "timeout_ms": "500"}', 150),
        (b"[1, 2]", 150),
        (b"not json", 150),
    ],
)
def test_the_context_budget_is_its_valid_timeout_ms_else_the_default(
    body: bytes, expected: int
) -> None:
    assert context_budget_ms(body) == expected
