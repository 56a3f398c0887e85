"""The FastAPI application: routers, the error handler, OpenAPI at /openapi.json."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from memory import __version__
from memory.api.deadline import RequestDeadlineMiddleware
from memory.api.errors import install_body_limit, install_error_handlers
from memory.api.middleware import ObservabilityMiddleware
from memory.api.routes import (
    agents,
    browse,
    candidates,
    context,
    dashboard,
    episodes,
    erasure,
    events,
    journal,
    memories,
    memory_admin,
    metrics,
    note_views,
    pipeline,
    search,
    system,
    tokens_admin,
    working,
)
from memory.api.routes import export as export_routes
from memory.api.routes import links as link_routes
from memory.api.routes import sleep as sleep_routes
from memory.api.routes import stats as stats_routes
from memory.api.routes.api_docs import install_api_docs
from memory.config import get_settings
from memory.db import limit_statements
from memory.ops.logs import configure_logging
from memory.retrieval import read

log = logging.getLogger(__name__)


def _warm_up() -> None:
    """Load the embedding and sparse models, then run one search of a user without notes,
    before the first request, so /v1/context meets its budget."""
    from memory.clients.embedder import embed_query
    from memory.clients.sparse_encoder import encode_sparse_query

    try:
        embed_query("warm up")
        encode_sparse_query("warm up")
    except Exception as exc:  # the API still serves everything that needs no embedding
        log.warning("embedder warm-up failed: %s", exc)
        return
    try:
        read.warm_read_path()
    except Exception as exc:  # a database not up yet: the first request pays instead
        log.warning("read path warm-up failed: %s", exc)


# Users read ahead at start-up at most; `read_ahead_startup_mb` bounds their bytes.
STARTUP_USERS = 1000
# API processes starting within this many seconds of one another read them once.
STARTUP_CLAIM_SECONDS = 60


def read_ahead_recent_users() -> bool:
    """At start-up, when read-ahead is on: the recent users' files and rows read ahead in
    the background by one of the deployment's starting processes; True when started."""
    retrieval = get_settings().retrieval
    if not retrieval.read_ahead or retrieval.read_ahead_startup_mb == 0:
        return False
    if not read.RECENT_USERS.claim_startup(STARTUP_CLAIM_SECONDS):
        return False
    return read.WARMER.read_ahead_recent(
        max_users=STARTUP_USERS,
        total_bytes=retrieval.read_ahead_startup_mb << 20,
        max_bytes=retrieval.read_ahead_max_mb << 20,
    )


def _freeze_startup_heap() -> None:
    """Move every object alive after start-up out of the collector's reach.

    The modules, their constants and the model session are ~280k objects that live as
    long as the process. Each full (oldest-generation) collection walked all of them:
    about 160 ms with the GIL held, every few hundred requests (every 366 in one LoCoMo
    run), and a /v1/context that ran into one overran its 150 ms budget (commit 3e45346,
    `benchmarks/results/locomo-s10-gc-freeze.json`).
    Frozen, they are never scanned; what requests allocate is collected as before.
    """
    gc.collect()
    gc.freeze()


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    configure_logging()
    api = get_settings().api
    # A request's statements never outlive its budget, even where nothing waits for them.
    limit_statements(
        statement_timeout_ms=api.request_timeout_ms, lock_timeout_ms=api.lock_timeout_ms
    )
    await run_in_threadpool(_warm_up)
    if await run_in_threadpool(read_ahead_recent_users):
        log.info("reading the recent users' search files ahead")
    _freeze_startup_heap()
    yield


def create_app() -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        title="MUMA",
        version=__version__,
        description="Multi-user, multi-agent long-term memory for AI agents.",
        docs_url=None,  # served from this process instead of a CDN (routes.api_docs)
        redoc_url=None,
    )
    install_error_handlers(app)
    # Inside the input guard (it reads the body whole first), outside every route.
    app.add_middleware(RequestDeadlineMiddleware, routes={"/v1/context": context.CONTEXT_BUDGET})
    install_body_limit(app)
    install_api_docs(app)
    app.include_router(system.router)
    app.include_router(episodes.router)
    app.include_router(memories.router)
    app.include_router(pipeline.router)
    app.include_router(search.router)
    app.include_router(context.router)
    app.include_router(memory_admin.router)
    app.include_router(working.router)
    app.include_router(agents.router)
    app.include_router(events.router)
    app.include_router(stats_routes.router)
    app.include_router(link_routes.router)
    app.include_router(export_routes.router)
    app.include_router(sleep_routes.router)
    for module in (browse, note_views, tokens_admin, erasure, candidates, journal):
        app.include_router(module.router)
    for module in (metrics, dashboard):
        app.include_router(module.router)
    app.add_middleware(ObservabilityMiddleware)
    _complete_openapi(app)
    return app


def _complete_openapi(app: FastAPI) -> None:
    """The generated document, plus what FastAPI cannot see (the capture body's models)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            episodes.add_body_schemas(generate())
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


app = create_app()
