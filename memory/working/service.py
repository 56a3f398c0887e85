"""L1 working memory: per-session items in Redis, promoted into the write path (L2).

Invariants:
- One Redis hash per (tenant, user, session), key `muma:wm:{tenant}:{user}:{session}`;
  each component is escaped, so ids containing ':' never share a key. A session belongs
  to one user: the user is part of the key, so nothing crosses users, and every agent of
  that user sees every item of the session (each item records the agent that put it).
- An item is stored once per content hash (sha256 of the whitespace-collapsed, casefolded
  content). Putting known content again adds to its activation (it never decreases),
  merges its metadata and counts the hit.
- Every write refreshes the key's TTL (`working.ttl_seconds`): an idle session expires.
- At most `working.max_items` items: past that, the lowest-activation (then least
  recently updated) items are evicted. A write is atomic per session (WATCH/MULTI).
- Promotion is idempotent: an item's episode idempotency key derives from user, session
  and content hash, so promoting the same item twice captures one episode.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

import redis

from memory.config import WorkingSettings
from memory.episodes.service import EpisodeInput
from memory.errors import InvalidInputError, TransientError
from memory.types import utcnow

KEY_PREFIX = "muma:wm"
PromotionReason = Literal["compaction", "reset", "end"]
PROMOTION_REASONS: tuple[str, ...] = ("compaction", "reset", "end")


def _escape(component: str) -> str:
    return component.replace("%", "%25").replace(":", "%3A")


def session_key(tenant_id: str, user_id: str, session_id: str) -> str:
    """The Redis key of one session's working memory (components escaped)."""
    return ":".join([KEY_PREFIX, *(_escape(c) for c in (tenant_id, user_id, session_id))])


def content_hash(content: str) -> str:
    return hashlib.sha256(" ".join(content.split()).casefold().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ItemInput:
    content: str
    activation: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)
    role: str = "assistant"
    speaker: str | None = None


@dataclass(frozen=True)
class WorkingItem:
    hash: str
    content: str
    activation: float
    agent_id: str
    role: str
    speaker: str | None
    metadata: dict[str, Any]
    hits: int
    created_at: datetime
    updated_at: datetime

    def to_json(self) -> str:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["updated_at"] = self.updated_at.isoformat()
        return json.dumps(data)

    @classmethod
    def from_json(cls, raw: str) -> WorkingItem:
        data = json.loads(raw)
        data["created_at"] = datetime.fromisoformat(data["created_at"])
        data["updated_at"] = datetime.fromisoformat(data["updated_at"])
        return cls(**data)


@dataclass(frozen=True)
class PutResult:
    items: list[WorkingItem]  # the stored state of each distinct item put, in input order
    evicted: int


def _merge(old: WorkingItem | None, new: ItemInput, agent_id: str, now: datetime) -> WorkingItem:
    if old is None:
        return WorkingItem(
            hash=content_hash(new.content),
            content=new.content,
            activation=float(new.activation),
            agent_id=agent_id,
            role=new.role,
            speaker=new.speaker,
            metadata=dict(new.metadata),
            hits=1,
            created_at=now,
            updated_at=now,
        )
    return WorkingItem(
        hash=old.hash,
        content=old.content,
        activation=old.activation + float(new.activation),
        agent_id=old.agent_id,
        role=old.role,
        speaker=old.speaker or new.speaker,
        metadata={**old.metadata, **new.metadata},
        hits=old.hits + 1,
        created_at=old.created_at,
        updated_at=now,
    )


def _eviction_order(item: WorkingItem) -> tuple[float, datetime]:
    return (item.activation, item.updated_at)


def put_items(
    *,
    client: redis.Redis,
    tenant_id: str,
    user_id: str,
    session_id: str,
    agent_id: str,
    items: Sequence[ItemInput],
    settings: WorkingSettings,
) -> PutResult:
    """Add or merge items atomically, refresh the TTL, evict past max_items."""
    if any(i.activation < 0 for i in items):
        raise InvalidInputError("items.activation must not be negative")
    key = session_key(tenant_id, user_id, session_id)

    def apply(pipe: redis.client.Pipeline) -> PutResult:
        stored = {h: WorkingItem.from_json(raw) for h, raw in pipe.hgetall(key).items()}
        now = utcnow()
        touched: dict[str, WorkingItem] = {}
        for item in items:
            digest = content_hash(item.content)
            touched[digest] = _merge(touched.get(digest) or stored.get(digest), item, agent_id, now)
        merged = {**stored, **touched}
        overflow = max(0, len(merged) - settings.max_items)
        evict = [i.hash for i in sorted(merged.values(), key=_eviction_order)[:overflow]]
        pipe.multi()
        pipe.hset(key, mapping={h: i.to_json() for h, i in touched.items() if h not in evict})
        if evict:
            pipe.hdel(key, *evict)
        pipe.expire(key, settings.ttl_seconds)
        return PutResult([i for h, i in touched.items() if h not in evict], len(evict))

    try:
        return client.transaction(apply, key, value_from_callable=True)
    except redis.RedisError as exc:
        raise TransientError(f"working memory unavailable: {exc}") from exc


def list_items(
    *, client: redis.Redis, tenant_id: str, user_id: str, session_id: str
) -> list[WorkingItem]:
    """The session's items, highest activation first (then most recently updated)."""
    try:
        raw = client.hgetall(session_key(tenant_id, user_id, session_id))
    except redis.RedisError as exc:
        raise TransientError(f"working memory unavailable: {exc}") from exc
    items = [WorkingItem.from_json(v) for v in raw.values()]
    return sorted(items, key=_eviction_order, reverse=True)


def remove_items(
    *, client: redis.Redis, tenant_id: str, user_id: str, session_id: str, hashes: Sequence[str]
) -> int:
    if not hashes:
        return 0
    try:
        return int(client.hdel(session_key(tenant_id, user_id, session_id), *hashes))
    except redis.RedisError as exc:
        raise TransientError(f"working memory unavailable: {exc}") from exc


def select_for_promotion(
    items: Sequence[WorkingItem], *, reason: str, threshold: float
) -> list[WorkingItem]:
    """Compaction promotes items with activation >= threshold; reset and end promote all."""
    if reason not in PROMOTION_REASONS:
        raise InvalidInputError(f"reason must be one of {', '.join(PROMOTION_REASONS)}")
    if reason == "compaction":
        return [i for i in items if i.activation >= threshold]
    return list(items)


def promotion_key(user_id: str, session_id: str, item_hash: str) -> str:
    """The episode idempotency key of a promoted item (unique per tenant, fixed length)."""
    digest = hashlib.sha256(f"{user_id}\x1f{session_id}\x1f{item_hash}".encode()).hexdigest()
    return f"wm:{digest}"


def promotion_episodes(
    *, user_id: str, session_id: str, items: Sequence[WorkingItem], reason: str
) -> list[EpisodeInput]:
    """Episodes (source "promotion") carrying promoted items into the write path."""
    return [
        EpisodeInput(
            user_id=user_id,
            agent_id=item.agent_id,
            session_id=session_id,
            role=item.role,
            content=item.content,
            speaker=item.speaker,
            occurred_at=item.created_at,
            metadata={
                **item.metadata,
                "working_memory": {
                    "activation": item.activation,
                    "hits": item.hits,
                    "reason": reason,
                },
            },
            idempotency_key=promotion_key(user_id, session_id, item.hash),
            source="promotion",
        )
        for item in items
    ]
