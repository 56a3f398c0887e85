"""GET /v1/export: a user's memories as json, jsonl or markdown, streamed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from memory.access.policy import Viewer
from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier
from memory.db import scoped_session_for, session_scope
from memory.ops.export import export_chunks
from memory.ops.users import require_known_user

router = APIRouter(tags=["memories"])
MEDIA_TYPES = {
    "jsonl": "application/x-ndjson",
    "json": "application/json",
    "markdown": "text/markdown; charset=utf-8",
}
SUFFIXES = {"jsonl": "jsonl", "json": "json", "markdown": "md"}


def _viewer(principal: Principal, user_id: str | None, agent_id: str | None) -> Viewer:
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        require_known_user(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
    return viewer


def _stream(viewer: Viewer, fmt: str) -> Iterator[str]:
    # Its own transaction, held while the response streams (one consistent snapshot),
    # bound to the viewer's tenant and user like the one `resolve_viewer` scoped.
    with scoped_session_for(viewer.tenant_id, viewer.user_id) as session:
        yield from export_chunks(session=session, viewer=viewer, fmt=fmt)


@router.get(
    "/v1/export",
    response_class=StreamingResponse,
    responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}},
)
def export(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    format: Annotated[Literal["jsonl", "json", "markdown"], Query()] = "jsonl",
) -> StreamingResponse:
    """Everything `muma export` writes: versions, links, provenance and access history.
    Viewer, operator and admin tokens export at user level (or as a named agent); an
    agent token exports only the memories that agent may see."""
    viewer = _viewer(principal, user_id, agent_id)
    filename = f"muma-{viewer.user_id}.{SUFFIXES[format]}"
    return StreamingResponse(
        _stream(viewer, format),
        media_type=MEDIA_TYPES[format],
        headers={"Content-Disposition": attachment(filename)},
    )


def attachment(filename: str) -> str:
    """A Content-Disposition any user id fits in: headers are Latin-1, so the name is
    given as ASCII (others replaced by "_") and, exactly, as RFC 6266's UTF-8 filename*."""
    plain = "".join(ch if " " <= ch < "\x7f" and ch not in '"\\' else "_" for ch in filename)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"
