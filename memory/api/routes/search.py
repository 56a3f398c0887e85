"""The read path over HTTP: /v1/search, and the search both it and /v1/context
(`memory.api.routes.context`) run; the read itself is `memory.retrieval.read`."""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, BackgroundTasks
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationInfo, field_validator
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.access.tokens import Principal
from memory.api.access_log import access_log
from memory.api.answers import SearchAnswer
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier, Kind, NotBlank, StorableTime, Strict
from memory.config import get_settings
from memory.retrieval.read import ReadAsk, read_memories
from memory.retrieval.routes import SearchFilters
from memory.retrieval.service import SearchHit, SearchOptions
from memory.types import utcnow
from memory.working.recall import WorkingHit

if TYPE_CHECKING:  # the context route calls this module's search_memories
    from memory.api.routes.context import ContextIn

router = APIRouter(tags=["read"])


class SearchIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    query: Annotated[str, Field(min_length=1, max_length=4000), NotBlank]
    # None: the server's retrieval.default_top_k (10).
    top_k: Annotated[int, Field(ge=1, le=50)] | None = None
    session_id: Identifier | None = None
    kinds: list[Kind] = Field(default_factory=list, max_length=6)
    domains: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=32
    )
    # A time without a zone is UTC, as for captured episodes.
    since: StorableTime | None = None
    until: StorableTime | None = None
    include_archived: bool = False
    # A preview (the dashboard) reads without counting as a use: no access is recorded.
    dry_run: bool = False

    @field_validator("until")
    @classmethod
    def _until_not_before_since(
        cls, value: datetime | None, info: ValidationInfo
    ) -> datetime | None:
        since = info.data.get("since")
        if value is not None and since is not None and value < since:
            raise ValueError("must not be before since (both bounds are inclusive)")
        return value


def search_memories(
    principal: Principal,
    body: SearchIn | ContextIn,
    query: str,
    top_k: int,
    timeout_ms: int | None = None,
    options: SearchOptions | None = None,
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    """The read (`memory.retrieval.read`) for a search's or a context's body, as the
    token's principal may ask it."""
    filters = SearchFilters()
    if isinstance(body, SearchIn):
        filters = SearchFilters(
            tuple(body.kinds), tuple(body.domains), body.since, body.until, body.include_archived
        )

    def resolve(session: Session) -> Viewer:
        return resolve_viewer(
            session=session,
            principal=principal,
            user_id=body.user_id,
            agent_id=body.agent_id,
            scope=False,
        )

    ask = ReadAsk(query, top_k, body.session_id, filters, timeout_ms, options)
    return read_memories(resolve, ask)


def record_use(background: BackgroundTasks, note_ids: list[uuid.UUID]) -> None:
    """Gather the read's accesses for this process's next batch (memory.api.access_log),
    after the answer is sent."""
    if note_ids and get_settings().retrieval.record_access:
        background.add_task(access_log().add, list(note_ids), utcnow())


# The read path's answers are JSON-ready (strings, numbers, lists, dicts), so they are
# encoded as they are: FastAPI's validation and jsonable_encoder of a returned dict cost
# 0.65 ms per search and 1.4 ms per context of 40 memories (commit 055d8df).
# FastAPI attaches the request's background tasks (access recording) to the response.
@router.post("/v1/search", response_class=JSONResponse, responses={200: {"model": SearchAnswer}})
def search(body: SearchIn, principal: PrincipalDep, background: BackgroundTasks) -> JSONResponse:
    """The top_k memories the caller may see, each with its explanation, and with a
    session_id that session's matching working items."""
    started = time.perf_counter()
    top_k = body.top_k or get_settings().retrieval.default_top_k
    hits, results, working = search_memories(principal, body, body.query, top_k)
    if not body.dry_run:
        record_use(background, [h.note.id for h in hits])
    took = round((time.perf_counter() - started) * 1000, 2)
    items = [w.to_json() for w in working]
    return JSONResponse({"results": results, "working": items, "took_ms": took})
