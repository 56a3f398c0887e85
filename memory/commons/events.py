"""L3 event stream: per-user Redis pub/sub channels (note created/updated/archived, conflicts).

Publishing is best effort and happens after the database commit: an event may be lost
when Redis is down, the state it describes never is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from memory.clients.redis import get_redis

log = logging.getLogger(__name__)


def channel_name(tenant_id: str, user_id: str) -> str:
    """One channel per (tenant, user); ids are percent-encoded so ':' cannot alias two."""
    return f"muma:events:{quote(tenant_id, safe='')}:{quote(user_id, safe='')}"


def publish_events(events: Iterable[dict[str, Any]]) -> int:
    events = list(events)
    if not events:
        return 0
    try:
        client = get_redis()
        pipe = client.pipeline(transaction=False)
        for event in events:
            pipe.publish(
                channel_name(str(event["tenant_id"]), str(event["user_id"])), json.dumps(event)
            )
        pipe.execute()
    except Exception as exc:  # best effort by design (see module docstring)
        log.warning("could not publish %d events: %s", len(events), exc)
        return 0
    return len(events)
