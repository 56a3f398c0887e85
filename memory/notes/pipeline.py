"""Stages 3-5 of the write path: embed pending notes in batches, then decide each one.

Invariants: pending notes are claimed with FOR UPDATE SKIP LOCKED, so concurrent workers
split a backlog instead of embedding it twice; a note is decided only while `pending`, so
a redelivered task is a no-op; UPDATE and DELETE close the old version (valid_to,
superseded_by) and never overwrite it; a note's terms enter the BM25 statistics exactly
when it becomes active.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from memory.activation.model import record_access
from memory.clients.embedder import Embedder
from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.episodes.pipeline import finish_episodes
from memory.links.models import Link
from memory.notes.decide import Candidate, Decision, decide_by_rules, decide_with_llm
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms, unindex_note_terms
from memory.notes.models import Note, NoteSource
from memory.ops.audit import record_event
from memory.types import utcnow

SIMILAR_LIMIT = 5
# The dense window embeds the turn with its nearest neighbours only: embedding cost grows
# with length, and the lexical window already covers the wider context.
WINDOW_EMBED_CHARS = 400


def embed_pending_notes(
    *, session: Session, embedder: Embedder, limit: int, window: bool = True
) -> list[uuid.UUID]:
    """Embed up to `limit` pending notes in one batch; return every pending id claimed.

    Notes already embedded by an earlier, interrupted run are returned too, so the decide
    stage picks them up.
    """
    notes = list(
        session.scalars(
            select(Note)
            .where(Note.status == "pending")
            .order_by(Note.created_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    )
    todo = [n for n in notes if n.embedding is None]
    if todo:
        texts = [n.embed_text or n.content for n in todo]
        if window:
            texts += [
                (n.window_text or n.embed_text or n.content)[:WINDOW_EMBED_CHARS] for n in todo
            ]
        vectors = embedder.embed(texts)
        for i, note in enumerate(todo):
            note.embedding = vectors[i]
            note.window_embedding = vectors[len(todo) + i] if window else None
            note.embedding_model = embedder.model_id
            apply_terms(note, note_terms(note))
        session.flush()
    return [n.id for n in notes]


def similar_notes(
    session: Session, note: Note, *, limit: int, min_similarity: float = 0.0
) -> list[Candidate]:
    """Active, current notes of the same user closest to `note` (cosine), best first."""
    distance = Note.embedding.cosine_distance(note.embedding)
    rows = session.execute(
        select(Note.id, Note.content, Note.speaker, (1 - distance).label("similarity"))
        .where(
            Note.tenant_id == note.tenant_id,
            Note.user_id == note.user_id,
            Note.status == "active",
            Note.valid_to.is_(None),
            Note.id != note.id,
        )
        .order_by(distance)
        .limit(limit)
    ).all()
    return [
        Candidate(r.id, r.content, r.speaker, float(r.similarity))
        for r in rows
        if float(r.similarity) >= min_similarity
    ]


@dataclass(frozen=True)
class Outcome:
    note_id: uuid.UUID
    decision: Decision
    active_id: uuid.UUID | None  # the note that now carries the fact (None after DELETE)


def decide_notes(
    *, session: Session, note_ids: Sequence[uuid.UUID], settings: Settings, llm: LlmClient | None
) -> list[Outcome]:
    """Decide every still-pending, embedded note among `note_ids`; finish their episodes."""
    notes = list(
        session.scalars(
            select(Note)
            .where(Note.id.in_(note_ids), Note.status == "pending", Note.embedding.is_not(None))
            .order_by(Note.created_at)
            .with_for_update(skip_locked=True)
        )
    )
    outcomes: list[Outcome] = []
    episode_decisions: dict[uuid.UUID, str] = {}
    for note in notes:
        episode_ids = list(
            session.scalars(select(NoteSource.episode_id).where(NoteSource.note_id == note.id))
        )
        candidates = similar_notes(session, note, limit=SIMILAR_LIMIT)
        if llm is not None:
            decision = decide_with_llm(llm, note.content, candidates)
        else:
            decision = decide_by_rules(note.content, note.speaker, candidates, settings.pipeline)
        active_id = _apply(session, note, decision, episode_ids)
        outcomes.append(Outcome(note.id, decision, active_id))
        for episode_id in episode_ids:
            episode_decisions.setdefault(episode_id, decision.action)
    session.flush()
    finish_episodes(
        session=session,
        episode_ids=list(episode_decisions),
        decisions=episode_decisions,
    )
    return outcomes


def _apply(
    session: Session, note: Note, decision: Decision, episode_ids: list[uuid.UUID]
) -> uuid.UUID | None:
    now = utcnow()
    target = session.get(Note, decision.target_id) if decision.target_id else None
    if decision.action == "NOOP" and target is not None:
        _reinforce(target, now)
        for episode_id in episode_ids:
            session.merge(
                NoteSource(note_id=target.id, episode_id=episode_id, relation="reinforced")
            )
        session.execute(delete(NoteSource).where(NoteSource.note_id == note.id))
        session.delete(note)
        _audit(session, target, "note.reinforced", decision)
        return target.id
    if decision.action in ("UPDATE", "DELETE") and target is not None:
        _close(session, target, now, superseded_by=note.id if decision.action == "UPDATE" else None)
        if decision.action == "DELETE":
            note.status = "deleted"
            note.valid_to = now
            _audit(session, target, "note.invalidated", decision)
            return None
        note.lineage_id, note.version = target.lineage_id, target.version + 1
        session.add(
            Link(
                tenant_id=note.tenant_id,
                user_id=note.user_id,
                source_id=note.id,
                target_id=target.id,
                kind="supersedes",
                weight=1.0,
            )
        )
    note.status = "active"
    index_note_terms(session=session, notes=[note])
    _audit(
        session, note, "note.created" if decision.action != "UPDATE" else "note.updated", decision
    )
    return note.id


def _reinforce(note: Note, now) -> None:  # type: ignore[no-untyped-def]
    times, count, first = record_access(
        list(note.access_times or []), note.access_count, note.first_access_at, now
    )
    note.access_times, note.access_count, note.first_access_at = times, count, first
    note.last_access_at = now
    note.importance = min(1.0, note.importance + 0.05)


def _close(session: Session, note: Note, now, *, superseded_by: uuid.UUID | None) -> None:  # type: ignore[no-untyped-def]
    """Close the current version bi-temporally; it stays stored and in the history."""
    if note.valid_to is None and note.status == "active":
        unindex_note_terms(session=session, notes=[note])
    note.valid_to = now
    note.superseded_by = superseded_by
    # Flush the new row first so the superseded_by foreign key points at a stored note.
    session.flush()


def _audit(session: Session, note: Note, action: str, decision: Decision) -> None:
    record_event(
        session=session,
        tenant_id=note.tenant_id,
        user_id=note.user_id,
        actor="pipeline",
        action=action,
        entity_type="note",
        entity_id=str(note.id),
        reason=decision.reason,
        data={
            "decision": decision.action,
            "target": str(decision.target_id) if decision.target_id else None,
            "similarity": decision.similarity,
        },
    )


EVENT_TYPES = {
    "ADD": "note.created",
    "UPDATE": "note.updated",
    "NOOP": "note.reinforced",
    "DELETE": "note.invalidated",
}


def note_event_payloads(
    *, session: Session, outcomes: Sequence[Outcome]
) -> list[dict[str, object]]:
    """Events for the per-user stream, built inside the transaction, published after it."""
    payloads: list[dict[str, object]] = []
    for outcome in outcomes:
        note = session.get(Note, outcome.active_id or outcome.note_id)
        if note is None:
            continue
        payloads.append(
            {
                "type": EVENT_TYPES[outcome.decision.action],
                "tenant_id": note.tenant_id,
                "user_id": note.user_id,
                "note_id": str(note.id),
                "agent_id": note.agent_id,
                "visibility": note.visibility,
                "domain": note.domain,
                "kind": note.kind,
                "at": utcnow().isoformat(),
            }
        )
    return payloads
