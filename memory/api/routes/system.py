"""Health and system status.

The status describes the deployment (version, models, where data lives) and holds no
user's data, except queue depths, which span every user: a token bound to a user gets
none (`queues` is empty).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from memory import __version__
from memory.api.deps import PrincipalDep
from memory.clients.broker import broker_url, is_amqp
from memory.config import Settings, get_settings
from memory.ops.health import (
    check_database,
    check_redis,
    check_workers,
    queue_depths,
    run_checks,
)
from memory.runtime.embedded import read_runtime_file
from tasks.app import app as celery_app

router = APIRouter()


@router.get("/healthz", tags=["system"])
async def healthz() -> JSONResponse:
    """Liveness of the database, Redis and workers, within about a second whatever hangs
    (a check with no answer by then counts as down); 503 when one is down. No token.
    Async, so that requests stuck on a frozen dependency, holding every request thread,
    cannot keep it waiting."""
    checks = await asyncio.to_thread(
        run_checks,
        {
            "database": check_database,
            "redis": check_redis,
            "workers": lambda: check_workers(celery_app.control.ping, count_all=False),
        },
    )
    healthy = all(check["ok"] for check in checks.values())
    body = {"status": "ok" if healthy else "degraded", "checks": checks}
    return JSONResponse(body, status_code=200 if healthy else 503)


def servers(settings: Settings) -> dict[str, str]:
    """Embedded or external, for the database and Redis. Under `muma up` the processes
    are given the embedded servers' URLs like external ones; its runtime record says
    which they are."""
    found = {
        "database": "external" if settings.database_url else "embedded",
        "redis": "external" if settings.redis_url else "embedded",
    }
    runtime = read_runtime_file(settings.home) or {}
    for server, url in (("database", settings.database_url), ("redis", settings.redis_url)):
        if url and runtime.get(f"{server}_url") == url and runtime.get(server) == "embedded":
            found[server] = "embedded"
    return found


@router.get("/v1/system/status", tags=["system"])
def system_status(principal: PrincipalDep) -> dict[str, Any]:
    settings = get_settings()
    return {
        "version": __version__,
        "embedding": {
            "provider": settings.embedding.provider,
            "model": settings.embedding.model,
            "dimension": settings.embedding.dimension,
        },
        "llm": {
            "configured": settings.llm.configured,
            "model": settings.llm.model if settings.llm.configured else None,
        },
        **servers(settings),
        "broker": "rabbitmq" if is_amqp(broker_url(settings)) else "redis",
        "queues": queue_depths() if principal.user_id is None else {},
    }
