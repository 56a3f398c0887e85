"""The one place domain errors become HTTP responses, and where their shape is documented.

Every error answers `{"error": <class>, "detail": <text naming the field>, ...}`; request
validation adds `fields: [{field, message}]`. The OpenAPI document describes that body in
place of FastAPI's default `HTTPValidationError`, so clients and fuzzers see the truth.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memory.api.middleware import InputGuardMiddleware
from memory.errors import AuthenticationError, MemoryServiceError

log = logging.getLogger(__name__)
FASTAPI_BODY_ERROR = "There was an error parsing the body"
HTTP_ERROR_NAMES = {
    400: "InvalidInputError",
    401: "AuthenticationError",
    403: "AccessDeniedError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    413: "InvalidInputError",
    422: "InvalidInputError",
}


ERROR_BODY: dict[str, Any] = {
    "title": "ErrorBody",
    "type": "object",
    "required": ["error", "detail"],
    "properties": {
        "error": {"type": "string", "title": "Error"},
        "detail": {"type": "string", "title": "Detail"},
        "fields": {
            "type": "array",
            "title": "Fields",
            "items": {
                "type": "object",
                "required": ["field", "message"],
                "properties": {
                    "field": {"type": "string", "title": "Field"},
                    "message": {"type": "string", "title": "Message"},
                },
            },
        },
    },
}


# A capture route's answer while the workers are behind (memory.episodes.backlog).
OVERLOADED_RESPONSE: dict[int | str, dict[str, Any]] = {
    429: {
        "description": "The workers are behind: nothing was stored; send again after "
        "the Retry-After header's seconds.",
        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}
        },
    }
}


def install_error_handlers(app: FastAPI) -> None:
    _document_error_body(app)

    @app.exception_handler(MemoryServiceError)
    async def _domain_error(_: Request, exc: MemoryServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthenticationError) else {}
        if exc.retry_after_seconds is not None:
            headers["Retry-After"] = str(exc.retry_after_seconds)
        if exc.status_code >= 500:
            log.warning("service error: %s", exc.message)
        return JSONResponse(exc.to_dict(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [validation_problem(item) for item in exc.errors()]
        detail = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return JSONResponse(
            {"error": "InvalidInputError", "detail": detail, "fields": problems}, status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Raised by the framework itself: unknown route, wrong method, unreadable body.
        status, detail = exc.status_code, str(exc.detail)
        if detail == FASTAPI_BODY_ERROR:
            # FastAPI's catch-all for a body json.loads could not take (bad UTF-8, nesting).
            status, detail = 422, "body: malformed JSON (not UTF-8, or nested too deeply)"
        name = HTTP_ERROR_NAMES.get(status, "HTTPError")
        return JSONResponse(
            {"error": name, "detail": detail}, status_code=status, headers=exc.headers
        )


def validation_problem(item: Any) -> dict[str, str]:
    """One validation error as {field, message}; malformed JSON is blamed on `body`.

    Only the leading element of `loc` names where the value came from (body, query
    string, path, header): a field of the same name further in (`query` in /v1/search's
    body) is the field itself and stays."""
    loc = [str(p) for p in item.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    if item.get("type") == "json_invalid":
        reason = (item.get("ctx") or {}).get("error", "")
        position = loc[0] if loc else "?"
        return {"field": "body", "message": f"malformed JSON at position {position}: {reason}"}
    return {"field": ".".join(loc) or "body", "message": str(item.get("msg", ""))}


def install_body_limit(app: FastAPI) -> None:
    """Guard what a request may carry: 413 past api.max_body_bytes, 422 for values
    PostgreSQL cannot store (NUL, lone surrogates, NaN; see `InputGuardMiddleware`)."""
    app.add_middleware(InputGuardMiddleware)


def _document_error_body(app: FastAPI) -> None:
    """Every documented 422 refers to `HTTPValidationError`: describe our body under it."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            schemas = document.get("components", {}).get("schemas", {})
            if "HTTPValidationError" in schemas:
                schemas["HTTPValidationError"] = ERROR_BODY
                schemas.pop("ValidationError", None)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
