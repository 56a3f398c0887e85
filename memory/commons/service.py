"""L3 transactive memory: "which agent knows about X" (DESIGN.md §8).

Invariants:
- `refresh_transactive_index` rebuilds one user's rows from that user's active, current
  notes only: one row per (author agent, topic), topics being each note's tags and its
  domain (lowercased, a note counted once per topic). Each row keeps the most common
  domain and the most restrictive visibility of its notes. The table is an operator
  summary at user level; it is never served to agents.
- `search_agents` never leaks: it counts only notes the viewer may see
  (`visible_clause`), computed from the notes themselves, so a topic or a count that
  comes from notes hidden from the caller never influences the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Subquery,
    case,
    delete,
    desc,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.commons.models import TransactiveEntry
from memory.notes.lexicon import user_terms_match
from memory.notes.models import Note
from memory.retrieval.text import analyse

VISIBILITY_RANK = {"open": 0, "scoped": 1, "private": 2, "user-only": 3}
MAX_TOPIC_LENGTH = 128
MAX_QUERY_TERMS = 32
TOP_TOPICS = 5
RECENCY_HALF_LIFE_DAYS = 30.0
INSERT_BATCH = 1000


def _current_notes(tenant_id: str, user_id: str) -> list[ColumnElement[bool]]:
    return [
        Note.tenant_id == tenant_id,
        Note.user_id == user_id,
        Note.status == "active",
        Note.valid_to.is_(None),
    ]


def refresh_transactive_index(*, session: Session, tenant_id: str, user_id: str) -> int:
    """Recompute the user's transactive rows from scratch; returns the number of rows."""
    values = _topic_rows(session, tenant_id, user_id)
    session.execute(
        delete(TransactiveEntry).where(
            TransactiveEntry.tenant_id == tenant_id, TransactiveEntry.user_id == user_id
        )
    )
    for start in range(0, len(values), INSERT_BATCH):
        statement = insert(TransactiveEntry).values(values[start : start + INSERT_BATCH])
        excluded = statement.excluded
        session.execute(
            statement.on_conflict_do_update(  # a concurrent refresh of the same user
                index_elements=["tenant_id", "user_id", "agent_id", "topic"],
                set_={
                    "domain": excluded.domain,
                    "visibility": excluded.visibility,
                    "note_count": excluded.note_count,
                    "last_write_at": excluded.last_write_at,
                },
            )
        )
    session.flush()
    return len(values)


def _topic_rows(session: Session, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
    """One aggregate per (author agent, topic) over the user's current notes."""
    topic = func.left(
        func.lower(func.trim(func.unnest(func.array_append(Note.tags, Note.domain)))),
        MAX_TOPIC_LENGTH,
    )
    topics = (
        select(Note.id, Note.agent_id, Note.domain, Note.visibility, Note.created_at,
               topic.label("topic"))
        .where(*_current_notes(tenant_id, user_id))
        .subquery()
    )  # fmt: skip
    # A note whose tag repeats its domain counts once for that topic.
    per_note = select(topics).distinct(topics.c.id, topics.c.topic).subquery()
    rank = case(*((per_note.c.visibility == v, r) for v, r in VISIBILITY_RANK.items()), else_=3)
    rows = session.execute(
        select(
            per_note.c.agent_id,
            per_note.c.topic,
            func.mode().within_group(per_note.c.domain).label("domain"),
            func.max(rank).label("rank"),
            func.count().label("note_count"),
            func.max(per_note.c.created_at).label("last_write_at"),
        )
        .where(per_note.c.topic != "")
        .group_by(per_note.c.agent_id, per_note.c.topic)
    ).all()
    by_rank = {r: v for v, r in VISIBILITY_RANK.items()}
    return [
        {
            "tenant_id": tenant_id,
            "user_id": user_id,
            "agent_id": r.agent_id,
            "topic": r.topic,
            "domain": r.domain,
            "visibility": by_rank[int(r.rank)],
            "note_count": int(r.note_count),
            "last_write_at": r.last_write_at,
        }
        for r in rows
    ]


def list_transactive_index(
    *, session: Session, tenant_id: str, user_id: str
) -> list[TransactiveEntry]:
    """The stored rows of one user (user-level callers only), most notes first."""
    return list(
        session.scalars(
            select(TransactiveEntry)
            .where(TransactiveEntry.tenant_id == tenant_id, TransactiveEntry.user_id == user_id)
            .order_by(desc(TransactiveEntry.note_count), TransactiveEntry.agent_id)
        )
    )


@dataclass(frozen=True)
class AgentExpertise:
    agent_id: str
    score: float
    note_count: int
    topics: list[str]
    last_write_at: datetime


def search_agents(
    *, session: Session, viewer: Viewer, query: str, limit: int = 10
) -> list[AgentExpertise]:
    """Agents ranked by how much they know about `query`, among notes the viewer sees.

    A note matches when its indexed terms share any analysed query term. Each matching
    note of an author counts 0.5 + 0.5 * 2^(-age_days / 30): recent knowledge weighs
    up to twice as much as old knowledge, and old knowledge still counts.
    """
    terms = list(dict.fromkeys(analyse(query)))[:MAX_QUERY_TERMS]
    if not terms or limit <= 0:
        return []
    age_days = func.extract("epoch", func.now() - Note.created_at) / 86400.0
    weight = 0.5 + 0.5 * func.power(2.0, -func.greatest(age_days, 0) / RECENCY_HALF_LIFE_DAYS)
    matched = (
        select(Note.agent_id, Note.tags, Note.created_at, weight.label("weight"))
        .where(
            visible_clause(viewer),
            Note.status == "active",
            Note.valid_to.is_(None),
            user_terms_match(
                Note.index_terms, tenant_id=viewer.tenant_id, user_id=viewer.user_id, terms=terms
            ),
        )
        .subquery()
    )
    ranked = session.execute(
        select(
            matched.c.agent_id,
            func.sum(matched.c.weight).label("score"),
            func.count().label("note_count"),
            func.max(matched.c.created_at).label("last_write_at"),
        )
        .group_by(matched.c.agent_id)
        .order_by(desc("score"), matched.c.agent_id)
        .limit(limit)
    ).all()
    if not ranked:
        return []
    topics = _top_topics(session, matched, [r.agent_id for r in ranked])
    return [
        AgentExpertise(
            agent_id=r.agent_id,
            score=round(float(r.score), 4),
            note_count=int(r.note_count),
            topics=topics.get(r.agent_id, []),
            last_write_at=r.last_write_at,
        )
        for r in ranked
    ]


def _top_topics(session: Session, matched: Subquery, agent_ids: list[str]) -> dict[str, list[str]]:
    tags = (
        select(matched.c.agent_id, func.lower(func.unnest(matched.c.tags)).label("tag"))
        .where(matched.c.agent_id.in_(agent_ids))
        .subquery()
    )
    rows = session.execute(
        select(tags.c.agent_id, tags.c.tag, func.count().label("n"))
        .group_by(tags.c.agent_id, tags.c.tag)
        .order_by(tags.c.agent_id, desc("n"), tags.c.tag)
    ).all()
    out: dict[str, list[str]] = {}
    for row in rows:
        bucket = out.setdefault(row.agent_id, [])
        if len(bucket) < TOP_TOPICS:
            bucket.append(row.tag)
    return out
