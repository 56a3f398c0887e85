"""The prompt-injection read: /v1/context, the <relevant-memories> block within a token
budget and about a time budget counted from the request's arrival."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from memory.access.tokens import Principal
from memory.api.answers import ContextAnswer
from memory.api.deadline import RouteBudget
from memory.api.deps import PrincipalDep
from memory.api.middleware import arrived_at
from memory.api.routes.journal import record_injection_later
from memory.api.routes.search import record_use, search_memories
from memory.api.schemas import Identifier, NotBlank, Strict
from memory.config import get_settings
from memory.retrieval.budget import Deadline
from memory.retrieval.context import CONTEXT_POOL_SIZE, ContextBlock, build_context
from memory.retrieval.first_person import known_user_name, speaks_in_first_person
from memory.retrieval.focus import focus_query
from memory.retrieval.gate import evidence_floors, evidenced
from memory.retrieval.injection import injectable
from memory.retrieval.service import SearchHit, SearchOptions
from memory.working.recall import WorkingHit

router = APIRouter(tags=["read"])
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="context")
OPTIONAL_STEPS_SHARE = 0.5


class ContextIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    session_id: Identifier | None = None
    prompt: Annotated[str, Field(min_length=1, max_length=16000), NotBlank]
    max_tokens: Annotated[int, Field(ge=1, le=32000)] = 1000
    timeout_ms: Annotated[int, Field(ge=1, le=60000)] = 150
    dry_run: bool = False


@router.post("/v1/context", response_class=JSONResponse, responses={200: {"model": ContextAnswer}})
def context(
    body: ContextIn, principal: PrincipalDep, background: BackgroundTasks, request: Request
) -> JSONResponse:
    """The <relevant-memories> block for a prompt, within max_tokens and about timeout_ms
    counted from the request's arrival (time spent queued under load is spent budget)."""
    started = arrived_at(request)
    budget_end = started + body.timeout_ms / 1000
    remaining = budget_end - time.monotonic()
    if remaining <= 0:  # the budget went on waiting for a thread: answer at once
        return _context_reply(ContextBlock(), [], started, timed_out=True)
    # Optional read steps stop at this share of the budget; the rest is left for scoring.
    deadline = Deadline(at=started + body.timeout_ms * OPTIONAL_STEPS_SHARE / 1000)
    # No length prior: the block is budgeted in tokens, and preferring longer notes spent
    # it on fewer memories (LoCoMo: 23.1 -> 19.8 per block, context recall .867 -> .862).
    # A prompt of fillers only ("thanks!") gets an empty block (memory.retrieval.gate).
    skip_filler = get_settings().retrieval.context_skip_filler
    options = SearchOptions(deadline=deadline, length_prior=0.0, skip_filler=skip_filler)
    future = _POOL.submit(_search_within, budget_end, principal, body, options)
    try:
        hits, results, working = future.result(timeout=remaining)
    except FutureTimeout:
        return _context_reply(ContextBlock(), [], started, timed_out=True)
    except Exception as exc:  # a statement timeout or a transient failure: answer empty
        if "statement timeout" in str(exc) or "canceling statement" in str(exc):
            return _context_reply(ContextBlock(), [], started, timed_out=True)
        raise
    settings = get_settings()
    floors = evidence_floors(settings, resolved=_resolved(principal, body))
    hits = evidenced(hits, body.prompt, floors)
    hits = injectable(hits, body.prompt, settings.trust, settings.candidates)
    block = build_context(hits, body.max_tokens, working, settings.working.context_share)
    by_id = {r["id"]: r for r in results}
    memories = [by_id[str(h.note.id)] for h in block.notes]
    if not body.dry_run:
        record_use(background, [h.note.id for h in block.notes])
        identity = (body.user_id, body.agent_id, body.session_id)
        record_injection_later(background, principal, identity, block.notes)
    # A read cut short by its budget is partial: what was ready, flagged as timed out.
    return _context_reply(block, memories, started, timed_out=deadline.partial)


def context_budget_ms(body: bytes) -> int:
    """The request's own `timeout_ms` (the default for a body the route will refuse)."""
    default = ContextIn.model_fields["timeout_ms"].default
    try:
        value = json.loads(body).get("timeout_ms", default)
    except (ValueError, AttributeError, RecursionError):
        return int(default)
    valid = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 60000
    return value if valid else int(default)


def late_context(arrived: float) -> JSONResponse:
    """A context whose search got no thread or no database in time: the empty block."""
    return _context_reply(ContextBlock(), [], arrived, timed_out=True)


# How memory.api.deadline answers a /v1/context that outlives its own timeout_ms.
CONTEXT_BUDGET = RouteBudget(budget_ms=context_budget_ms, late=late_context)


def _resolved(principal: Principal, body: ContextIn) -> bool:
    """Whether the search read the prompt's first person as the user's name."""
    user_id = body.user_id or principal.user_id
    retrieval = get_settings().retrieval
    prompt = focus_query(body.prompt, retrieval.query_focus_chars)
    return bool(
        user_id
        and retrieval.resolve_first_person
        and speaks_in_first_person(prompt)
        and known_user_name(principal.tenant_id, user_id) is not None
    )


def _search_within(
    budget_end: float, principal: Principal, body: ContextIn, options: SearchOptions
) -> tuple[list[SearchHit], list[dict[str, Any]], list[WorkingHit]]:
    """The context's search, unless its budget ran out while it waited for a thread: the
    handler has answered by then, and under load the work would only delay the next."""
    remaining_ms = int((budget_end - time.monotonic()) * 1000)
    if remaining_ms <= 0:
        if options.deadline is not None:
            options.deadline.skipped.append("search")  # so the reply says it was cut short
        return [], [], []
    return search_memories(principal, body, body.prompt, CONTEXT_POOL_SIZE, remaining_ms, options)


def _context_reply(
    block: ContextBlock, memories: list[dict[str, Any]], started: float, *, timed_out: bool
) -> JSONResponse:
    """`started`: the request's arrival, on time.monotonic()'s clock."""
    took = round((time.monotonic() - started) * 1000, 2)
    content = {
        "context": block.text,
        "memories": memories,
        "working": [w.to_json() for w in block.working],
        "tokens": block.tokens,
        "took_ms": took,
        "timed_out": timed_out,
    }
    return JSONResponse(content)
