"""Capture: POST /v1/episodes persists first, then enqueues, and answers 202."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from memory.api.deps import PrincipalDep
from memory.api.errors import OVERLOADED_RESPONSE, validation_problem
from memory.api.identity import require_writer
from memory.api.schemas import (
    MAX_BATCH,
    EpisodeBatch,
    EpisodeIds,
    EpisodeIn,
    HugeInteger,
    RejectedEpisode,
)
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.backlog import require_capacity
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.errors import InvalidInputError
from memory.trust.origin import declared_origin
from tasks.pipeline import enqueue_episodes

router = APIRouter(tags=["capture"])

_BODY_SCHEMA = {
    "oneOf": [
        {"$ref": "#/components/schemas/EpisodeBatch"},
        {"$ref": "#/components/schemas/EpisodeIn"},
    ]
}


def _integer(digits: str) -> int | HugeInteger:
    # Python refuses to convert 4,300+ digits (a ValueError, once a 500): keep such a
    # number as its digits, so validation names the field that holds it.
    return int(digits) if len(digits) <= HugeInteger.DIGITS else HugeInteger(digits)


def add_body_schemas(openapi: dict[str, Any]) -> None:
    """Put the models `_BODY_SCHEMA` names into the document's components: the body is
    read by hand (one bad item is rejected alone), so FastAPI does not list them."""
    components = openapi.setdefault("components", {}).setdefault("schemas", {})
    for model in (EpisodeBatch, EpisodeIn):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema


async def read_json(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw, parse_int=_integer)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"body: malformed JSON ({exc})") from exc
    except RecursionError as exc:
        raise InvalidInputError("body: JSON nested too deeply") from exc


@dataclass(frozen=True)
class ParsedEpisodes:
    """The valid items of a capture, their positions in the request, and the rejected."""

    episodes: list[EpisodeIn]
    positions: list[int]
    rejected: list[RejectedEpisode]
    count: int


def parse_episodes(body: Any) -> ParsedEpisodes:
    """One episode, or a batch validated item by item: a bad item is rejected on its own
    (one oversized turn does not sink its batch); a batch with no valid item, a bad
    envelope or a bad single episode is a 422."""
    try:
        if not (isinstance(body, dict) and "episodes" in body):
            return ParsedEpisodes([EpisodeIn.model_validate(body)], [0], [], 1)
        items = body["episodes"]
        envelope_ok = set(body) == {"episodes"} and isinstance(items, list)
        if not envelope_ok or not 1 <= len(items) <= MAX_BATCH:
            EpisodeBatch.model_validate(body)  # raises the envelope's own error
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from exc
    limit = get_settings().api.max_batch
    if len(items) > limit:  # the setting's limit, below the schema's 500
        message = f"List should have at most {limit} items after validation, not {len(items)}"
        raise RequestValidationError([{"loc": ("body", "episodes"), "msg": message}])
    return _parse_items(items)


def _parse_items(items: list[Any]) -> ParsedEpisodes:
    episodes: list[EpisodeIn] = []
    positions: list[int] = []
    rejected: list[RejectedEpisode] = []
    errors: list[Any] = []
    for index, item in enumerate(items):
        try:
            episodes.append(EpisodeIn.model_validate(item))
            positions.append(index)
        except ValidationError as exc:
            located = [{**e, "loc": ("body", "episodes", index, *e["loc"])} for e in exc.errors()]
            errors += located
            problems = [validation_problem(e) for e in located]
            detail = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            rejected.append(RejectedEpisode(index=index, detail=detail, fields=problems))
    if not episodes:
        raise RequestValidationError(errors)
    return ParsedEpisodes(episodes, positions, rejected, len(items))


@router.post(
    "/v1/episodes",
    status_code=202,
    response_model=EpisodeIds,
    responses=OVERLOADED_RESPONSE,
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": _BODY_SCHEMA}}}
    },
)
async def post_episodes(
    request: Request, principal: PrincipalDep, background: BackgroundTasks
) -> EpisodeIds:
    """Capture one episode or a batch of up to 500; the same idempotency_key gives the same id."""
    parsed = parse_episodes(await read_json(request))
    episodes = parsed.episodes
    for episode in episodes:
        require_writer(principal, episode.user_id)
    inputs = [
        EpisodeInput(
            user_id=e.user_id,
            agent_id=e.agent_id,
            session_id=e.session_id,
            role=e.role,
            content=e.content,
            speaker=e.speaker,
            occurred_at=e.occurred_at,
            metadata=e.metadata,
            idempotency_key=e.idempotency_key,
            origin=declared_origin(e.origin),
        )
        for e in episodes
    ]
    results = await run_in_threadpool(_capture, principal.tenant_id, inputs)
    # Published once the answer is sent: the episodes are already stored, and one that a
    # crash leaves unpublished is published by the periodic sweep, so the acknowledgement
    # need not wait for a round trip to Redis on a busy machine.
    created = [episode_id for episode_id, new in results if new]
    if created:
        background.add_task(enqueue_episodes, created)
    ids: list[uuid.UUID | None] = [None] * parsed.count
    for position, (episode_id, _) in zip(parsed.positions, results, strict=True):
        ids[position] = episode_id
    return EpisodeIds(episode_ids=ids, rejected=parsed.rejected)


def _capture(tenant_id: str, inputs: list[EpisodeInput]) -> list[tuple[uuid.UUID, bool]]:
    # One INSERT (atomic on its own) stores the whole batch: autocommit spares the
    # acknowledgement two round trips (the idempotency look-up after it only reads).
    with session_scope(autocommit=True) as session:
        require_capacity(session=session, limit=get_settings().pipeline.max_backlog)
        return capture_episodes(session=session, tenant_id=tenant_id, episodes=inputs)
