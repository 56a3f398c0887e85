"""Episode capture and pipeline state.

Invariants: a captured episode is committed before anything is enqueued (durable first);
an idempotency key maps to exactly one episode per tenant, so a retried capture returns
the same id and is never processed twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session

from memory.access.audience import require_agent_id
from memory.db import CompiledStatement
from memory.episodes.models import Episode
from memory.erasure.guard import being_erased_clause, refuse_if_being_erased
from memory.trust.origin import EpisodeOrigin, derive_origin
from memory.types import EPISODE_STATUSES, utcnow


@dataclass(frozen=True)
class EpisodeInput:
    user_id: str
    agent_id: str
    session_id: str
    role: str
    content: str
    speaker: str | None = None
    occurred_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    source: str = "capture"
    # What the caller declared (checked against the role); None derives it.
    origin: EpisodeOrigin | None = None


def capture_episodes(
    *, session: Session, tenant_id: str, episodes: Sequence[EpisodeInput]
) -> list[tuple[uuid.UUID, bool]]:
    """Store episodes in one statement; return (id, newly_created) in input order.

    Nothing of the batch is stored while one of its users (or its tenant) is being erased:
    the statement itself refuses it, and BeingErasedError (409) names the user.
    """
    now = utcnow()
    rows: list[dict[str, Any]] = []
    ids_by_key: dict[str, uuid.UUID] = {}
    result: list[tuple[uuid.UUID, bool]] = []
    for item in episodes:
        require_agent_id(item.agent_id)
        key = item.idempotency_key
        if key is not None and key in ids_by_key:  # the same key twice in one batch
            result.append((ids_by_key[key], False))
            continue
        episode_id = uuid.uuid4()
        if key is not None:
            ids_by_key[key] = episode_id
        rows.append(_row(tenant_id, episode_id, item, now))
        result.append((episode_id, True))
    inserted: set[uuid.UUID] = set()
    if rows:
        columns = {name: [row[name] for row in rows] for name in _CAPTURE_COLUMNS}
        for name in ("metadata", "options"):
            columns[name] = [Jsonb(value) for value in columns[name]]
        inserted = {row.id for row in _capture_statement().rows(session, columns)}
    if len(inserted) < len(rows):  # a retried key, or a user being erased
        refuse_if_being_erased(
            session=session, tenant_id=tenant_id, user_ids={row["user_id"] for row in rows}
        )
    missing = {k: v for k, v in ids_by_key.items() if v not in inserted}
    existing = _ids_for_keys(session, tenant_id, list(missing)) if missing else {}
    remap = {missing[k]: existing[k] for k in missing if k in existing}
    return [(remap.get(i, i), created and i in inserted) for i, created in result]


# Every column a capture sets; one array parameter each, so one SQL text for any batch.
_CAPTURE_COLUMNS = (
    "id",
    "tenant_id",
    "user_id",
    "agent_id",
    "session_id",
    "role",
    "speaker",
    "content",
    "occurred_at",
    "metadata",
    "options",
    "source",
    "origin",
    "origin_ref",
    "idempotency_key",
    "status",
    "attempts",
    "created_at",
    "updated_at",
    "enqueued_at",
)


@cache
def _capture_statement() -> CompiledStatement:
    """INSERT of a batch given as one array per column (`unnest`), skipping idempotency
    keys already stored, RETURNING the ids inserted. Built once: the ORM's bulk insert
    compiled a multi-row VALUES for every capture (~2 ms of the API's CPU per capture).

    The whole batch is skipped while an erasure of one of its users (or of its tenant)
    runs, tested in this statement (one probe of the partial index of running erasures),
    not before it: a capture whose statement starts after the erasure's row is committed
    stores nothing, and one that started earlier has ended before the erasure's last
    pass (memory.erasure.drain), which then removes what it stored."""
    table = Episode.__table__
    arrays = {name: bindparam(name, type_=ARRAY(table.c[name].type)) for name in _CAPTURE_COLUMNS}
    batch = select(
        func.unnest(*arrays.values()).table_valued(*_CAPTURE_COLUMNS).render_derived("batch")
    ).where(~being_erased_clause(arrays["tenant_id"], arrays["user_id"]))
    return CompiledStatement(
        insert(Episode)
        .from_select(list(_CAPTURE_COLUMNS), batch)
        .on_conflict_do_nothing(index_elements=["tenant_id", "idempotency_key"])
        .returning(Episode.id)
    )


def _row(
    tenant_id: str, episode_id: uuid.UUID, item: EpisodeInput, now: datetime
) -> dict[str, Any]:
    origin = derive_origin(
        role=item.role,
        source=item.source,
        speaker=item.speaker,
        metadata=item.metadata,
        declared=item.origin,
    )
    return {
        "id": episode_id,
        "tenant_id": tenant_id,
        "user_id": item.user_id,
        "agent_id": item.agent_id,
        "session_id": item.session_id,
        "role": item.role,
        "speaker": item.speaker,
        "content": item.content,
        "occurred_at": item.occurred_at or now,
        "metadata": item.metadata,
        "options": item.options,
        "source": item.source,
        "origin": origin.kind,
        "origin_ref": origin.ref,
        "idempotency_key": item.idempotency_key,
        "status": "queued",
        "attempts": 0,
        "created_at": now,
        "updated_at": now,
        # Publishing follows the commit; if it fails, the sweep republishes after a while.
        "enqueued_at": now,
    }


def _ids_for_keys(session: Session, tenant_id: str, keys: list[str]) -> dict[str, uuid.UUID]:
    rows = session.execute(
        select(Episode.idempotency_key, Episode.id).where(
            Episode.tenant_id == tenant_id, Episode.idempotency_key.in_(keys)
        )
    )
    return {key: episode_id for key, episode_id in rows}


def mark_enqueued(*, session: Session, episode_ids: Sequence[uuid.UUID]) -> None:
    session.execute(
        update(Episode).where(Episode.id.in_(list(episode_ids))).values(enqueued_at=utcnow())
    )


def requeue_candidates(
    *,
    session: Session,
    stuck_after_seconds: int,
    limit: int = 500,
    messages_waiting: bool = False,
) -> list[uuid.UUID]:
    """Claim episodes that need (re-)publishing and stamp them, so one sweep takes each.

    `queued` ones never published (captured while Redis was down) or published long ago,
    and `processing` ones idle for longer than the threshold (their worker died). While
    `messages_waiting` (the extraction queue holds messages: the workers are behind), an
    episode published long ago is only waiting its turn, not lost, and is left alone:
    re-publishing it would add a message that finds it done.
    """
    cutoff = utcnow() - timedelta(seconds=stuck_after_seconds)
    published_long_ago = Episode.enqueued_at < cutoff
    lost = Episode.enqueued_at.is_(None)
    if not messages_waiting:
        lost = lost | published_long_ago
    query = (
        select(Episode.id)
        .where(
            or_(
                (Episode.status == "queued") & lost,
                (Episode.status == "processing")
                & (Episode.updated_at < cutoff)
                & (Episode.enqueued_at.is_(None) | (Episode.enqueued_at < cutoff)),
            )
        )
        .order_by(Episode.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    episode_ids = list(session.scalars(query))
    if episode_ids:
        mark_enqueued(session=session, episode_ids=episode_ids)
    return episode_ids


def pipeline_counts(*, session: Session, tenant_id: str) -> dict[str, int]:
    rows = session.execute(
        select(Episode.status, func.count())
        .where(Episode.tenant_id == tenant_id)
        .group_by(Episode.status)
    )
    counts = {status: 0 for status in EPISODE_STATUSES}
    counts.update({status: int(n) for status, n in rows})
    return counts


def get_episode(*, session: Session, tenant_id: str, episode_id: uuid.UUID) -> Episode | None:
    episode = session.get(Episode, episode_id)
    return episode if episode is not None and episode.tenant_id == tenant_id else None
