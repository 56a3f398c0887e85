"""GET /v1/events: the user's L3 event stream as server-sent events.

Any role; an agent token names its agent_id and receives only events about notes that
agent may see (the same rules as reading the notes). `?max_events=` and `?timeout=` end
the stream early (tests, polling clients); otherwise it runs until the client leaves.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier
from memory.commons.stream import stream_events
from memory.config import get_settings
from memory.db import session_scope
from memory.runtime.embedded import resolve_redis_url

router = APIRouter(tags=["events"])


@router.get(
    "/v1/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
def get_events(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    max_events: Annotated[int | None, Query(ge=1, le=10000)] = None,
    timeout: Annotated[float | None, Query(gt=0, le=86400)] = None,
) -> StreamingResponse:
    """note.created/updated/reinforced/invalidated, conflicts, ...: one SSE frame each;
    a `: heartbeat` comment every 15 s keeps proxies from closing an idle stream."""
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
    settings = get_settings()
    frames = stream_events(
        viewer=viewer,
        redis_url=resolve_redis_url(settings.redis_url, settings.home),
        max_events=max_events,
        timeout_seconds=timeout,
    )
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
