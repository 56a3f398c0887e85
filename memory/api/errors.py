"""The one place domain errors become HTTP responses."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from memory.errors import AuthenticationError, MemoryServiceError

log = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemoryServiceError)
    async def _domain_error(_: Request, exc: MemoryServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthenticationError) else None
        if exc.status_code >= 500:
            log.warning("service error: %s", exc.message)
        return JSONResponse(exc.to_dict(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for item in exc.errors():
            loc = [str(p) for p in item.get("loc", ()) if p not in ("body", "query", "path")]
            problems.append({"field": ".".join(loc) or "body", "message": item.get("msg", "")})
        detail = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return JSONResponse(
            {"error": "InvalidInputError", "detail": detail, "fields": problems}, status_code=422
        )


def install_body_limit(app: FastAPI) -> None:
    """Refuse bodies over api.max_body_bytes with 413 before reading them."""
    from memory.config import get_settings

    @app.middleware("http")
    async def _limit(request: Request, call_next):  # type: ignore[no-untyped-def]
        limit = get_settings().api.max_body_bytes
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return JSONResponse(
                {"error": "InvalidInputError", "detail": f"body: larger than {limit} bytes"},
                status_code=413,
            )
        return await call_next(request)
