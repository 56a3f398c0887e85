"""Promoting idle L1 sessions into long-term memory before Redis expires them.

Every write to a session refreshes its TTL (`working.ttl_seconds`), so a session whose
remaining TTL is at most `grace_seconds` has been idle for ttl - grace: it has ended
without a `session_end` hook. Beat finds such sessions (a read-only SCAN) and promotes
each one like `session_end` does: every item becomes an episode (source "promotion").

Invariants: promotion is idempotent (the episode idempotency key derives from user,
session and item hash, memory.working.service.promotion_key), the episodes are committed
before the items leave Redis (a crash in between promotes again, capturing nothing new),
and only keys of the working-memory namespace are read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import redis
from sqlalchemy.orm import Session

from memory.episodes.service import capture_episodes
from memory.errors import TransientError
from memory.ops.audit import record_event
from memory.working.service import KEY_PREFIX, WorkingItem, promotion_episodes

SCAN_COUNT = 500


@dataclass(frozen=True)
class SessionRef:
    tenant_id: str
    user_id: str
    session_id: str


def _unescape(component: str) -> str:
    # Inverse of memory.working.service._escape ('%' → %25 first, then ':' → %3A).
    return component.replace("%3A", ":").replace("%25", "%")


def parse_session_key(key: str) -> SessionRef | None:
    """The (tenant, user, session) of a working-memory key, None for any other key."""
    parts = key.split(":")
    if len(parts) != 5 or ":".join(parts[:2]) != KEY_PREFIX:
        return None
    return SessionRef(*(_unescape(p) for p in parts[2:]))


def idle_sessions(client: redis.Redis, *, grace_seconds: int) -> list[SessionRef]:
    """Sessions that will expire within `grace_seconds` (idle since ttl - grace)."""
    try:
        keys = [
            k.decode() if isinstance(k, bytes) else str(k)
            for k in client.scan_iter(match=f"{KEY_PREFIX}:*", count=SCAN_COUNT)
        ]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.ttl(key)
        ttls = pipe.execute()
    except redis.RedisError as exc:
        raise TransientError(f"working memory unavailable: {exc}") from exc
    found = []
    for key, ttl in zip(keys, ttls, strict=True):
        ref = parse_session_key(key)
        # ttl -2: gone meanwhile; -1: no expiry (never written by put_items): not idle.
        if ref is not None and 0 <= int(ttl) <= grace_seconds:
            found.append(ref)
    return sorted(found, key=lambda r: (r.tenant_id, r.user_id, r.session_id))


def capture_idle_session(
    *, session: Session, ref: SessionRef, items: list[WorkingItem]
) -> list[tuple[uuid.UUID, bool]]:
    """Capture every item of an idle session as an episode; audited."""
    episodes = promotion_episodes(
        user_id=ref.user_id, session_id=ref.session_id, items=items, reason="end"
    )
    if not episodes:
        return []
    results = capture_episodes(session=session, tenant_id=ref.tenant_id, episodes=episodes)
    record_event(
        session=session,
        tenant_id=ref.tenant_id,
        user_id=ref.user_id,
        actor="sleep",
        action="working.promoted",
        entity_type="session",
        entity_id=ref.session_id[:64],
        reason="idle session expiring",
        data={
            "session_id": ref.session_id,
            "items": len(items),
            "episodes": [str(i) for i, _ in results],
        },
    )
    return results
