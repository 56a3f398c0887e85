"""The FastAPI application: routers, the error handler, OpenAPI at /openapi.json."""

from __future__ import annotations

from fastapi import FastAPI

from memory import __version__
from memory.api.errors import install_body_limit, install_error_handlers
from memory.api.routes import episodes, memories, pipeline, system


def create_app() -> FastAPI:
    app = FastAPI(
        title="MUMA",
        version=__version__,
        description="Multi-user, multi-agent long-term memory for AI agents.",
    )
    install_error_handlers(app)
    install_body_limit(app)
    app.include_router(system.router)
    app.include_router(episodes.router)
    app.include_router(memories.router)
    app.include_router(pipeline.router)
    return app


app = create_app()
