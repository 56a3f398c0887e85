"""Server-sent events of one user's event channel, filtered by what the viewer may see.

Invariants:
- An event reaches a viewer only if it names the viewer's tenant and user and
  `can_see_attributes` allows its (agent_id, visibility, domain); an event without a
  visibility reaches user-level viewers only (fail closed).
- The stream opens with a `: connected` comment once the subscription is active, sends
  a `: heartbeat` comment whenever `heartbeat_seconds` pass without output, and ends
  after `max_events` delivered events or `timeout_seconds`, whichever comes first.
- One Redis connection per stream (asyncio, so an idle stream holds no thread); it is
  closed however the stream ends, including a client disconnect (cancellation).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis

from memory.access.policy import Viewer, can_see_attributes
from memory.commons.events import channel_name

HEARTBEAT_SECONDS = 15.0


def event_visible(viewer: Viewer, event: dict[str, Any]) -> bool:
    if event.get("tenant_id") != viewer.tenant_id or event.get("user_id") != viewer.user_id:
        return False
    return can_see_attributes(
        viewer,
        agent_id=event.get("agent_id"),
        visibility=event.get("visibility"),
        domain=event.get("domain"),
    )


def format_event(event: dict[str, Any]) -> str:
    """One SSE frame: `event:` is the event's type, `data:` its JSON (one line)."""
    kind = str(event.get("type", "message")).replace("\n", " ")
    return f"event: {kind}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"


def _decode(message: dict[str, Any] | None) -> dict[str, Any] | None:
    if not message or message.get("type") != "message":
        return None
    try:
        event = json.loads(message["data"])
    except (TypeError, ValueError):
        return None
    return event if isinstance(event, dict) else None


async def stream_events(
    *,
    viewer: Viewer,
    redis_url: str,
    max_events: int | None = None,
    timeout_seconds: float | None = None,
    heartbeat_seconds: float | None = None,
) -> AsyncIterator[str]:
    """SSE frames for the viewer's channel (see the module invariants).

    `heartbeat_seconds` defaults to HEARTBEAT_SECONDS, read at call time.
    """
    heartbeat = heartbeat_seconds or HEARTBEAT_SECONDS
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    started = time.monotonic()
    delivered = 0
    try:
        await pubsub.subscribe(channel_name(viewer.tenant_id, viewer.user_id))
        yield ": connected\n\n"
        last_output = time.monotonic()
        while max_events is None or delivered < max_events:
            now = time.monotonic()
            if timeout_seconds is not None and now - started >= timeout_seconds:
                return
            wait = heartbeat - (now - last_output)
            if timeout_seconds is not None:
                wait = min(wait, timeout_seconds - (now - started))
            if wait <= 0:
                yield ": heartbeat\n\n"
                last_output = time.monotonic()
                continue
            event = _decode(await pubsub.get_message(timeout=min(wait, 1.0)))
            if event is not None and event_visible(viewer, event):
                yield format_event(event)
                delivered += 1
                last_output = time.monotonic()
    finally:
        await pubsub.aclose()
        await client.aclose()
