"""A request's read: the memories a viewer may see for a query, with the session's
working items, as /v1/search and /v1/context answer them (the routes translate HTTP to and
from this).

Invariants: the query is embedded off the request's thread while its lexical routes run;
ranking runs as the owner and every hit is re-checked under row-level security before it
leaves (`rls_checked`); a read records nothing itself (access recording is the caller's
follow-up); the read-ahead of the user's search files starts only after the answer.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
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
from memory.working.recall import WorkingHit, recall_working_items

log = logging.getLogger(__name__)
# Query embeddings run here while the request's lexical routes wait on PostgreSQL.
EMBED_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="embed")
# Reads a user's search files ahead after their first search (`memory.retrieval.warm`),
# and at start-up those of the users read ahead most recently before.
RECENT_USERS = RecentUsers(get_redis)
# The searches in progress: the read-ahead's graph walks wait for a quiet moment.
READS = ReadsInFlight()
WARMER = UserWarmer(session_scope, recent=RECENT_USERS, reads=READS)

# Names the viewer inside the read's transaction (the API resolves its token's identity).
ResolveViewer = Callable[[Session], Viewer]


@dataclass(frozen=True)
class ReadAsk:
    """What a read asks for: `timeout_ms` cancels its statements past it; `options` shape
    it as a context's (`memory.retrieval.service.SearchOptions`)."""

    query: str
    top_k: int
    session_id: str | None = None
    filters: SearchFilters = field(default_factory=SearchFilters)
    timeout_ms: int | None = None
    options: SearchOptions | None = None


def result_json(hit: SearchHit, sources: list[dict[str, Any]]) -> dict[str, Any]:
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


def read_memories(
    resolve: ResolveViewer, ask: ReadAsk
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    """The memories for `ask.query`, as hits and as results, and the working items of the
    ask's session that match it (`memory.working.recall`), read once the identity and the
    hits have been checked. `resolve` names the viewer inside the read's transaction."""
    with READS.reading():
        return _read_memories(resolve, ask)


def _read_memories(
    resolve: ResolveViewer, ask: ReadAsk
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    settings = get_settings()
    query = focus_query(ask.query, settings.retrieval.query_focus_chars)
    # Embedded in parallel with the transaction's first statements: the dense route waits
    # for it after the viewer is resolved and BM25 has run (`run_routes`); the sparse
    # vector is waited for when the candidates' rows are read.
    # A prompt in the first person is embedded once the user's name is known (below).
    first_person = settings.retrieval.resolve_first_person and speaks_in_first_person(query)
    vector = None if first_person else EMBED_POOL.submit(embed_query, query, settings)
    sparse = (
        EMBED_POOL.submit(encode_sparse_query, query, settings) if settings.sparse.weight else None
    )
    with read_transaction(ask.timeout_ms) as session:
        # Ranked as the owner: under row-level security PostgreSQL cannot use the GIN and
        # trigram indexes of the lexical routes (see rls_checked); the hits are re-checked.
        viewer = resolve(session)
        name = None
        if vector is None:
            name = user_name(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
            vector = EMBED_POOL.submit(embed_query, dense_query(query, name), settings)
        hits = search_notes(
            session=session,
            viewer=viewer,
            query=query,
            vector=vector,
            top_k=ask.top_k,
            settings=settings,
            filters=ask.filters,
            options=ask.options,
            aside=lambda: read_transaction(ask.timeout_ms, aside=True),
            sparse=sparse,
            asker=name,
        )
        hits, sources = rls_checked(session, viewer, hits)
        results = [result_json(h, sources[h.note.id]) for h in hits]
    working = _session_items(viewer, ask.session_id, query, ask.options, settings.working)
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
def read_transaction(timeout_ms: int | None, *, aside: bool = False) -> Iterator[Session]:
    """A read's transaction (planned per execution), cancelled past `timeout_ms`; `aside`:
    one a read runs beside its own (`memory.retrieval.aside`)."""
    with session_scope(custom_plans=True, aside=aside) as session:
        if timeout_ms is not None:
            session.execute(text(f"SET LOCAL statement_timeout = {int(timeout_ms)}"))
        yield session


def rls_checked(
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
    vector = EMBED_POOL.submit(embed_query, query, settings)
    with read_transaction(None) as session:
        viewer = WARM_UP_VIEWER
        user_name(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
        search_notes(
            session=session,
            viewer=viewer,
            query=query,
            vector=vector,
            top_k=10,
            settings=settings,
            aside=lambda: read_transaction(None, aside=True),
        )
