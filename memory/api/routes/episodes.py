"""Capture: POST /v1/episodes persists first, then enqueues, and answers 202."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from memory.api.deps import PrincipalDep
from memory.api.identity import require_writer
from memory.api.schemas import EpisodeBatch, EpisodeIds, EpisodeIn
from memory.db import session_scope
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.errors import InvalidInputError
from tasks.pipeline import enqueue_episodes

router = APIRouter(tags=["capture"])

_BODY_SCHEMA = {
    "oneOf": [
        {"$ref": "#/components/schemas/EpisodeBatch"},
        {"$ref": "#/components/schemas/EpisodeIn"},
    ]
}


async def read_json(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"body: malformed JSON ({exc})") from exc
    except RecursionError as exc:
        raise InvalidInputError("body: JSON nested too deeply") from exc


def parse_episodes(body: Any) -> list[EpisodeIn]:
    try:
        if isinstance(body, dict) and "episodes" in body:
            return EpisodeBatch.model_validate(body).episodes
        return [EpisodeIn.model_validate(body)]
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from exc


@router.post(
    "/v1/episodes",
    status_code=202,
    response_model=EpisodeIds,
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": _BODY_SCHEMA}}}
    },
)
async def post_episodes(
    request: Request, principal: PrincipalDep, background: BackgroundTasks
) -> EpisodeIds:
    """Capture one episode or a batch of up to 500; the same idempotency_key gives the same id."""
    episodes = parse_episodes(await read_json(request))
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
    return EpisodeIds(episode_ids=[episode_id for episode_id, _ in results])


def _capture(tenant_id: str, inputs: list[EpisodeInput]) -> list[tuple[uuid.UUID, bool]]:
    # One INSERT (atomic on its own) stores the whole batch: autocommit spares the
    # acknowledgement two round trips (the idempotency look-up after it only reads).
    with session_scope(autocommit=True) as session:
        return capture_episodes(session=session, tenant_id=tenant_id, episodes=inputs)
