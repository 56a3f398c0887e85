"""The read path over HTTP: /v1/search, and the search both it and /v1/context
(`memory.api.routes.context`) run."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, BackgroundTasks
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationInfo, field_validator
from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.access.tokens import Principal
from memory.api.access_log import access_log
from memory.api.answers import SearchAnswer
from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier, Kind, NotBlank, StorableTime, Strict
from memory.clients.embedder import embed_query
from memory.clients.redis import get_redis
from memory.clients.sparse_encoder import encode_sparse_query
from memory.config import RetrievalSettings, WorkingSettings, get_settings
from memory.db import scope_session, session_scope
from memory.notes.service import readable_note_sources
from memory.retrieval.first_person import dense_query, speaks_in_first_person, user_name
from memory.retrieval.focus import focus_query
from memory.retrieval.foreground import ReadsInFlight
from memory.retrieval.gate import asks_anything
from memory.retrieval.recent_users import RecentUsers
from memory.retrieval.routes import SearchFilters
from memory.retrieval.service import SearchHit, SearchOptions, json_number, search_notes
from memory.retrieval.warm import UserWarmer
from memory.trust.origin import provenance
from memory.types import utcnow
from memory.working.recall import WorkingHit, recall_working_items

if TYPE_CHECKING:  # the context route calls this module's search_memories
    from memory.api.routes.context import ContextIn

router = APIRouter(tags=["read"])
log = logging.getLogger(__name__)
# Query embeddings run here while the request's lexical routes wait on PostgreSQL.
_EMBED_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="embed")
# Reads a user's search files ahead after their first search (`memory.retrieval.warm`),
# and at start-up those of the users read ahead most recently before.
RECENT_USERS = RecentUsers(get_redis)
# The searches in progress: the read-ahead's graph walks wait for a quiet moment.
READS = ReadsInFlight()
WARMER = UserWarmer(session_scope, recent=RECENT_USERS, reads=READS)


class SearchIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    query: Annotated[str, Field(min_length=1, max_length=4000), NotBlank]
    top_k: Annotated[int, Field(ge=1, le=50)] = 10
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


def _result(hit: SearchHit, sources: list[dict[str, Any]]) -> dict[str, Any]:
    note = hit.note
    return {
        "id": str(note.id),
        "content": note.content,
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "speaker": note.speaker,
        "agent_id": note.agent_id,
        **provenance(note),
        "occurred_at": note.occurred_at.isoformat(),
        # A note with no recorded access has base level -inf (it fails every threshold; a
        # filtered search may still list it below): its score is sent as null.
        "score": json_number(hit.score),
        "sources": [
            {
                "episode_id": str(s["episode_id"]),
                "occurred_at": s["occurred_at"].isoformat(),
                "metadata": s["metadata"],
            }
            for s in sources
        ],
        "explanation": hit.explanation(),
    }


def search_memories(
    principal: Principal,
    body: SearchIn | ContextIn,
    query: str,
    top_k: int,
    timeout_ms: int | None = None,
    options: SearchOptions | None = None,
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    """The memories for `query`, as hits and as results, and the working items of the
    body's session that match it (`memory.working.recall`), read once the identity and the
    hits have been checked."""
    with READS.reading():
        return _search_memories(principal, body, query, top_k, timeout_ms, options)


def _search_memories(
    principal: Principal,
    body: SearchIn | ContextIn,
    query: str,
    top_k: int,
    timeout_ms: int | None,
    options: SearchOptions | None,
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    settings = get_settings()
    query = focus_query(query, settings.retrieval.query_focus_chars)
    filters = SearchFilters()
    if isinstance(body, SearchIn):
        filters = SearchFilters(
            tuple(body.kinds), tuple(body.domains), body.since, body.until, body.include_archived
        )
    # Embedded in parallel with the transaction's first statements: the dense route waits
    # for it after the viewer is resolved and BM25 has run (`run_routes`); the sparse
    # vector is waited for when the candidates' rows are read.
    # A prompt in the first person is embedded once the user's name is known (below).
    first_person = settings.retrieval.resolve_first_person and speaks_in_first_person(query)
    vector = None if first_person else _EMBED_POOL.submit(embed_query, query, settings)
    sparse = (
        _EMBED_POOL.submit(encode_sparse_query, query, settings) if settings.sparse.weight else None
    )
    with _read_transaction(timeout_ms) as session:
        # Ranked as the owner: under row-level security PostgreSQL cannot use the GIN and
        # trigram indexes of the lexical routes (see _rls_checked); the hits are re-checked.
        viewer = resolve_viewer(
            session=session,
            principal=principal,
            user_id=body.user_id,
            agent_id=body.agent_id,
            scope=False,
        )
        name = None
        if vector is None:
            name = user_name(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
            vector = _EMBED_POOL.submit(embed_query, dense_query(query, name), settings)
        hits = search_notes(
            session=session,
            viewer=viewer,
            query=query,
            vector=vector,
            top_k=top_k,
            settings=settings,
            filters=filters,
            options=options,
            aside=lambda: _read_transaction(timeout_ms, aside=True),
            sparse=sparse,
            asker=name,
        )
        hits, sources = _rls_checked(session, viewer, hits)
        results = [_result(h, sources[h.note.id]) for h in hits]
    working = _session_items(viewer, body.session_id, query, options, settings.working)
    # After the answer is ready: the read-ahead's reads would slow this search's own.
    _note_search(viewer, settings.retrieval)
    return hits, results, working


def _session_items(
    viewer: Viewer,
    session_id: str | None,
    query: str,
    options: SearchOptions | None,
    working: WorkingSettings,
) -> list[WorkingHit]:
    """The session's working items for `query`, read as the viewer's user; none for a
    prompt the small-talk gate answers empty (`memory.retrieval.gate`)."""
    if session_id and options is not None and options.skip_filler and not asks_anything(query):
        return []
    return recall_working_items(
        client=get_redis(),
        tenant_id=viewer.tenant_id,
        user_id=viewer.user_id,
        session_id=session_id,
        query=query,
        limit=working.recall_top_k,
    )


def _note_search(viewer: Viewer, retrieval: RetrievalSettings) -> None:
    if retrieval.read_ahead:
        WARMER.note_search(
            viewer.tenant_id,
            viewer.user_id,
            idle_seconds=retrieval.read_ahead_idle_seconds,
            max_bytes=retrieval.read_ahead_max_mb << 20,
        )


@contextlib.contextmanager
def _read_transaction(timeout_ms: int | None, *, aside: bool = False) -> Iterator[Session]:
    """A read's transaction (planned per execution), cancelled past `timeout_ms`; `aside`:
    one a read runs beside its own (`memory.retrieval.aside`)."""
    with session_scope(custom_plans=True, aside=aside) as session:
        if timeout_ms is not None:
            session.execute(text(f"SET LOCAL statement_timeout = {int(timeout_ms)}"))
        yield session


def _rls_checked(
    session: Session, viewer: Viewer, hits: list[SearchHit]
) -> tuple[list[SearchHit], dict[uuid.UUID, list[dict[str, Any]]]]:
    """Bind the transaction to the viewer's tenant and user, then keep only the hits that
    PostgreSQL's row-level security still returns, with their sources (one statement):
    nothing ranked for another user leaves.

    Why ranking is not scoped itself: a policy is a security barrier, and PostgreSQL never
    evaluates a non-leakproof operator (`@@`, ILIKE) as an index condition beneath one,
    so the BM25 and verbatim routes would scan every note of the user (measured 9 ms ->
    167 ms per lexical query for a user with 100k notes).
    """
    scope_session(session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
    ids = [hit.note.id for hit in hits]
    sources = readable_note_sources(session=session, note_ids=ids) if ids else {}
    if len(sources) < len(ids):
        log.error(
            "row-level security refused %d search hits for tenant %s user %s",
            len(ids) - len(sources),
            viewer.tenant_id,
            viewer.user_id,
        )
    return [hit for hit in hits if hit.note.id in sources], sources


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
    hits, results, working = search_memories(principal, body, body.query, body.top_k)
    if not body.dry_run:
        record_use(background, [h.note.id for h in hits])
    took = round((time.perf_counter() - started) * 1000, 2)
    items = [w.to_json() for w in working]
    return JSONResponse({"results": results, "working": items, "took_ms": took})


# A user no token can name (identifiers never hold a space): the warm-up's searches find
# nothing and record nothing.
WARM_UP_VIEWER = Viewer(tenant_id="muma warm-up", user_id="muma warm-up", agent_id=None)


def warm_read_path() -> None:
    """One search of a user without notes through the request's own pieces (the embedding
    threads, a read transaction and one beside it, the routes' compiled statements, the
    first-person look-up), so that a process's first /v1/context does not pay for them
    (right after a start, the first one on the LongMemEval sample's user overran its
    150 ms budget in 3 of 3 starts, and in 1 of 3 with this search first).
    """
    settings = get_settings()
    query = "What did I say about the warm-up?"
    vector = _EMBED_POOL.submit(embed_query, query, settings)
    with _read_transaction(None) as session:
        viewer = WARM_UP_VIEWER
        user_name(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
        search_notes(
            session=session,
            viewer=viewer,
            query=query,
            vector=vector,
            top_k=10,
            settings=settings,
            aside=lambda: _read_transaction(None, aside=True),
        )
