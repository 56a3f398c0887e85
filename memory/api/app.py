"""The FastAPI application: routers, the error handler, OpenAPI at /openapi.json."""

from __future__ import annotations

from fastapi import FastAPI

from memory import __version__
from memory.api.errors import install_error_handlers
from memory.api.routes import system


def create_app() -> FastAPI:
    app = FastAPI(
        title="MUMA",
        version=__version__,
        description="Multi-user, multi-agent long-term memory for AI agents.",
    )
    install_error_handlers(app)
    app.include_router(system.router)
    return app


app = create_app()
