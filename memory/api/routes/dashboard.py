"""The dashboard: a static single page served by the API, plus the one call it makes first.

Invariants: the page and its assets are public and hold no data; every data call the
page makes carries the bearer token the user signed in with, and the server enforces
roles on each of them (the page only hides what a role cannot do). Assets come from
this package only (no CDN, works offline), by a strict file-name pattern, with a
Content-Security-Policy that allows nothing but same-origin scripts, styles and calls.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from memory.api.deps import PrincipalDep
from memory.config import get_settings
from memory.errors import NotFoundError
from memory.runtime.embedded import read_runtime_file

router = APIRouter(tags=["dashboard"])
ASSETS = Path(__file__).resolve().parents[1] / "dashboard"
ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*\.(js|css|svg)$")
MEDIA_TYPES = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# Feature name -> the route whose presence enables it (other areas may not be deployed).
FEATURES = {
    "search": ("POST", "/v1/search"),
    "context": ("POST", "/v1/context"),
    "browse": ("GET", "/v1/memories"),
    "users": ("GET", "/v1/users"),
    "pipeline": ("GET", "/v1/pipeline"),
    "dead_letters": ("GET", "/v1/dead-letters"),
    "conflicts": ("GET", "/v1/conflicts"),
    "journal": ("GET", "/v1/journal"),
    "candidates": ("GET", "/v1/candidates"),
    "resolve_conflicts": ("POST", "/v1/conflicts/{conflict_id}/resolve"),
    "consolidate": ("POST", "/v1/consolidate"),
    "stats": ("GET", "/v1/stats"),
    "agents": ("GET", "/v1/agents"),
    "put_agent": ("PUT", "/v1/agents/{agent_id}"),
    "tokens": ("GET", "/v1/tokens"),
    "links": ("POST", "/v1/links"),
    "export": ("GET", "/v1/export"),
    "graph": ("GET", "/v1/memories/{note_id}/graph"),
    "metrics": ("GET", "/metrics"),
}
# Features whose routes refuse a token bound to a user (they span every user).
UNBOUND_FEATURES = ("put_agent", "metrics")


def _page() -> FileResponse:
    return FileResponse(ASSETS / "index.html", media_type="text/html", headers=SECURITY_HEADERS)


@router.get("/dashboard", include_in_schema=False)
def dashboard() -> FileResponse:
    return _page()


@router.get("/dashboard/", include_in_schema=False)
def dashboard_slash() -> FileResponse:
    return _page()


@router.get("/dashboard/{name}", include_in_schema=False)
def dashboard_asset(name: str) -> Response:
    match = ASSET_NAME.match(name)
    path = ASSETS / name
    if match is None or not path.is_file():
        raise NotFoundError("no such dashboard file", name=name[:64])
    return FileResponse(path, media_type=MEDIA_TYPES[match.group(1)], headers=SECURITY_HEADERS)


def _template(path: str) -> str:
    """A route path with its parameter names erased: /v1/x/{a} and /v1/x/{b} are one route."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def _features(request: Request, bound: bool) -> dict[str, bool]:
    """Which optional areas this deployment serves (read from its OpenAPI document) to
    this token: not those a `bound` token is refused."""
    paths = request.app.openapi().get("paths", {})
    present = {(method.upper(), _template(path)) for path, ops in paths.items() for method in ops}
    return {
        name: (m, _template(p)) in present and not (bound and name in UNBOUND_FEATURES)
        for name, (m, p) in FEATURES.items()
    }


@router.get("/v1/dashboard/session")
def dashboard_session(principal: PrincipalDep, request: Request) -> dict[str, Any]:
    """Who the token is (role, tenant, bound user), what the deployment offers it, and links.
    Any valid token; the dashboard calls it once at sign-in."""
    settings = get_settings()
    runtime = read_runtime_file(settings.home) or {}
    bound = principal.user_id is not None
    return {
        "role": principal.role,
        "tenant_id": principal.tenant_id,
        "user_id": principal.user_id,
        "token_id": str(principal.token_id),
        "features": _features(request, bound=bound),
        # Flower shows every user's tasks: not a page for a token bound to one user.
        "flower_url": None if bound else runtime.get("flower_url"),
        "settings": {
            "retrieval_threshold": settings.activation.retrieval_threshold,
            "prune_threshold": settings.decay.prune_threshold,
            "hard_prune_threshold": settings.decay.hard_prune_threshold,
            "context_max_tokens": settings.retrieval.context_max_tokens,
            "context_timeout_ms": settings.retrieval.context_timeout_ms,
        },
    }
