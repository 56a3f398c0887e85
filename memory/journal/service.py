"""The turn journal: record what /v1/context injected, read both sides back for a viewer,
prune old injections, and drop the entries of a forgotten memory.

Invariants:
- An injection is recorded in one INSERT, one row per injected memory, holding ids,
  ranks, scores, route ranks and labels only (never the prompt or a memory's text).
- Reading goes through the viewer: a memory the viewer may not read is left out of
  every entry (and an agent sees other agents' injections only for memories it may
  read); the turns come from `memory.journal.turns` under the same rule.
- Forgetting a memory deletes every row naming any of its versions; erasing a user
  deletes all of theirs (`memory.erasure.catalog`, scope `user`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, func, insert, or_, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.config import Settings
from memory.journal.models import JournalInjection
from memory.journal.turns import list_turns
from memory.notes.models import Note
from memory.retrieval.hits import SearchHit, json_number
from memory.types import utcnow

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
PRUNE_BATCH = 5000


@dataclass(frozen=True)
class InjectedMemory:
    """One line of an injected block, as the journal keeps it (no text)."""

    note_id: uuid.UUID
    score: float | None
    explanation: dict[str, Any]
    origin: str
    trust: str
    candidate: bool

    @classmethod
    def of(cls, hit: SearchHit) -> InjectedMemory:
        note = hit.note
        return cls(
            note_id=note.id,
            score=json_number(hit.score),
            explanation=hit.explanation(),
            origin=note.origin,
            trust=note.trust,
            candidate=note.review == "candidate",
        )


@dataclass(frozen=True)
class InjectionScope:
    """Whose answer it was: tenant, user, the agent it was built for, the session."""

    tenant_id: str
    user_id: str
    agent_id: str | None
    session_id: str | None


def record_injection(
    *,
    session: Session,
    scope: InjectionScope,
    memories: Sequence[InjectedMemory],
    at: datetime | None = None,
) -> uuid.UUID | None:
    """Record one answer's injected memories in block order; None when it held none."""
    if not memories:
        return None
    injection_id, at = uuid.uuid4(), at or utcnow()
    rows = [
        {
            "injection_id": injection_id,
            "tenant_id": scope.tenant_id,
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            "session_id": scope.session_id,
            "at": at,
            "note_id": memory.note_id,
            "rank": rank,
            "score": memory.score,
            "explanation": memory.explanation,
            "origin": memory.origin,
            "trust": memory.trust,
            "candidate": memory.candidate,
        }
        for rank, memory in enumerate(memories, start=1)
    ]
    session.execute(insert(JournalInjection).values(rows))
    return injection_id


def injected_note_texts(
    *,
    session: Session,
    scope: InjectionScope,
    since: datetime,
    until: datetime,
) -> list[str]:
    """The contents of the memories injected into `scope`'s session between `since` and
    `until`, each once (what an assistant turn of that session may repeat back)."""
    injected = select(JournalInjection.note_id).where(
        JournalInjection.tenant_id == scope.tenant_id,
        JournalInjection.user_id == scope.user_id,
        JournalInjection.session_id == scope.session_id,
        JournalInjection.at.between(since, until),
    )
    return list(session.scalars(select(Note.content).where(Note.id.in_(injected))))


def prune_injections(*, session: Session, retention_days: int, now: datetime, limit: int) -> int:
    """Delete up to `limit` injection rows older than `retention_days`; the count deleted."""
    cutoff = now - timedelta(days=retention_days)
    oldest = (
        select(JournalInjection.id)
        .where(JournalInjection.at < cutoff)
        .order_by(JournalInjection.at)
        .limit(limit)
    )
    result = session.execute(delete(JournalInjection).where(JournalInjection.id.in_(oldest)))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def forget_journal_entries(
    *, session: Session, tenant_id: str, user_id: str, note_ids: Sequence[uuid.UUID]
) -> None:
    """Delete the injection rows naming any of `note_ids` (a forgotten memory's versions)."""
    if note_ids:
        session.execute(
            delete(JournalInjection).where(
                JournalInjection.tenant_id == tenant_id,
                JournalInjection.user_id == user_id,
                JournalInjection.note_id.in_(list(note_ids)),
            )
        )


def read_journal(
    *,
    session: Session,
    viewer: Viewer,
    settings: Settings,
    session_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """The viewer's journal: the newest `limit` turns and `limit` injections (of one
    session, or of all), newest first."""
    limit = max(1, min(limit, MAX_LIMIT))
    turns = list_turns(
        session=session, viewer=viewer, settings=settings, session_id=session_id, limit=limit
    )
    injections = list_injections(session=session, viewer=viewer, session_id=session_id, limit=limit)
    return {"turns": turns, "injections": injections}


def _readable(viewer: Viewer) -> ColumnElement[bool]:
    """The row's note exists and the viewer may read it."""
    return (
        select(Note.id).where(Note.id == JournalInjection.note_id, visible_clause(viewer)).exists()
    )


def list_injections(
    *, session: Session, viewer: Viewer, session_id: str | None, limit: int
) -> list[dict[str, Any]]:
    """The viewer's newest `limit` injections, each with the memories it may read."""
    j = JournalInjection
    conditions: list[ColumnElement[bool]] = [
        j.tenant_id == viewer.tenant_id,
        j.user_id == viewer.user_id,
    ]
    if session_id is not None:
        conditions.append(j.session_id == session_id)
    readable = _readable(viewer)
    shown = readable if viewer.user_level else or_(j.agent_id == viewer.agent_id, readable)
    newest = (
        select(j.injection_id)
        .where(*conditions, shown)
        .group_by(j.injection_id)
        .order_by(func.max(j.at).desc(), j.injection_id)
        .limit(limit)
    )
    ids = list(session.scalars(newest))
    if not ids:
        return []
    rows = session.execute(
        select(j, readable.label("readable"))
        .where(*conditions, j.injection_id.in_(ids))
        .order_by(j.at.desc(), j.injection_id, j.rank)
    ).all()
    out: dict[uuid.UUID, dict[str, Any]] = {}
    for row, is_readable in rows:
        entry = out.setdefault(row.injection_id, _injection(row))
        if is_readable:
            entry["memories"].append(_memory(row))
        else:
            entry["hidden"] = True
    return list(out.values())


def _injection(row: JournalInjection) -> dict[str, Any]:
    return {
        "injection_id": str(row.injection_id),
        "at": row.at.isoformat(),
        "agent_id": row.agent_id,
        "session_id": row.session_id,
        "hidden": False,
        "memories": [],
    }


def _memory(row: JournalInjection) -> dict[str, Any]:
    why = row.explanation or {}
    return {
        "note_id": str(row.note_id),
        "rank": row.rank,
        "score": row.score,
        "routes": why.get("routes") or {},
        "explanation": why,
        "origin": row.origin,
        "trust": row.trust,
        "candidate": row.candidate,
        "why": injection_reason(row.rank, row.score, why, row.trust, row.candidate),
    }


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


def injection_reason(
    rank: int, score: float | None, why: dict[str, Any], trust: str, candidate: bool
) -> str:
    """Why the memory was in the block, in words."""
    routes = why.get("routes") or {}
    ranked = sorted(routes.items(), key=lambda route: (route[1], route[0]))
    found = ", ".join(f"{name} #{place}" for name, place in ranked) or "no route"
    parts = [
        f"line {rank}, score {_number(score)}",
        f"found by {found}",
        f"relevance {_number(why.get('relevance'))}",
        f"base level {_number(why.get('base_level'))}",
        f"retention {_number(why.get('retention'))}",
    ]
    if trust != "high":
        parts.append(f"{trust} trust")
    if candidate:
        parts.append("an unconfirmed candidate, marked as such")
    return "; ".join(parts)
