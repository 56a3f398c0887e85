"""Stages 1-2 of the write path: extract facts from an episode and construct pending notes.

Invariants: an episode is claimed with FOR UPDATE SKIP LOCKED, so two deliveries of the
same task never work on it at once; its pending notes are created once (a re-run returns
the ones already there); an episode that yields no fact is `done` with decision NOOP and
stays stored. With an LLM, invalid output after one repair raises LlmOutputError: the task
dead-letters it and the episode is kept as `failed`, never silently dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import select, union_all
from sqlalchemy.orm import Session

from memory.activation.model import initial_half_life
from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.episodes.extraction import ExtractedFact, extract_facts
from memory.episodes.models import Episode
from memory.notes.construct import NoteDraft, construct_note, neighbour_line
from memory.notes.models import Note, NoteSource
from memory.types import NOTE_KINDS, utcnow

# Explicit memories and tool results may hold several facts; chat turns stay whole
# (retrieval-notes.md: one unit per turn keeps the evidence together).
MAX_FACTS = {"capture": 1, "explicit": 4, "promotion": 4, "sync": 4}


def claim_episode(*, session: Session, episode_id: uuid.UUID) -> Episode | None:
    """Lock the episode for this worker; None if another worker holds it or it is gone."""
    return session.scalar(
        select(Episode).where(Episode.id == episode_id).with_for_update(skip_locked=True)
    )


def claim_queued_episode(*, session: Session, captured_before: datetime) -> uuid.UUID | None:
    """Lock the oldest episode still `queued` since before `captured_before` that no other
    worker holds; None if there is none. Under a backlog a worker takes these along, so
    the later stages get batches instead of one note per task. (status, updated_at) is
    indexed: the claim costs the same with thousands queued."""
    return session.scalar(
        select(Episode.id)
        .where(Episode.status == "queued", Episode.updated_at < captured_before)
        .order_by(Episode.updated_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    )


def pending_note_ids(*, session: Session, episode_id: uuid.UUID) -> list[uuid.UUID]:
    query = (
        select(Note.id)
        .join(NoteSource, NoteSource.note_id == Note.id)
        .where(NoteSource.episode_id == episode_id, Note.status == "pending")
    )
    return list(session.scalars(query))


def _has_notes(session: Session, episode_id: uuid.UUID) -> bool:
    return (
        session.scalar(
            select(NoteSource.note_id).where(NoteSource.episode_id == episode_id).limit(1)
        )
        is not None
    )


NEIGHBOURS_EACH_SIDE = 2  # ±2 turns measured better than ±1 on LoCoMo (window BM25)


def _neighbours(session: Session, episode: Episode) -> list[str]:
    """Up to two turns before and after, same session, as "Speaker: text" lines, nearest
    first (previous, next, the one before, the one after), so a length cap on the window
    keeps the closest context. One round trip, only the columns the lines need."""
    scope = (
        Episode.tenant_id == episode.tenant_id,
        Episode.user_id == episode.user_id,
        Episode.session_id == episode.session_id,
    )
    columns = (
        Episode.seq,
        Episode.content,
        Episode.role,
        Episode.speaker,
        Episode.agent_id,
        Episode.metadata_.label("meta"),
    )
    before = (
        select(*columns)
        .where(*scope, Episode.seq < episode.seq)
        .order_by(Episode.seq.desc())
        .limit(NEIGHBOURS_EACH_SIDE)
    )
    after = (
        select(*columns)
        .where(*scope, Episode.seq > episode.seq)
        .order_by(Episode.seq)
        .limit(NEIGHBOURS_EACH_SIDE)
    )
    rows = list(session.execute(union_all(before.subquery().select(), after.subquery().select())))
    earlier = sorted((r for r in rows if r.seq < episode.seq), key=lambda r: -r.seq)
    later = sorted((r for r in rows if r.seq > episode.seq), key=lambda r: r.seq)
    lines = [
        neighbour_line(
            row.content,
            role=row.role,
            speaker=row.speaker,
            agent_id=row.agent_id,
            metadata=row.meta,
        )
        for row in _nearest_first(earlier, later)
    ]
    return [line for line in lines if line]


def _nearest_first(before: list[Any], after: list[Any]) -> list[Any]:
    ordered: list[Any] = []
    for index in range(max(len(before), len(after))):
        ordered += [side[index] for side in (before, after) if index < len(side)]
    return ordered


LLM_EXTRACT_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": list(NOTE_KINDS)},
                },
                "required": ["text"],
            },
        }
    },
    "required": ["facts"],
}
LLM_EXTRACT_SYSTEM = (
    "Extract the discrete facts worth remembering long-term from one conversation turn. "
    "Write each fact as a self-contained sentence in the third person, naming the speaker "
    "instead of 'I', and keep dates, names, numbers and identifiers verbatim. Return "
    '{"facts": []} when the turn holds nothing worth remembering. JSON only.'
)


def _llm_facts(llm: LlmClient, episode: Episode, base: list[ExtractedFact]) -> list[ExtractedFact]:
    speaker = episode.speaker or episode.role
    answer = llm.complete_json(
        LLM_EXTRACT_SYSTEM,
        f"Speaker: {speaker}\nDate: {episode.occurred_at.date().isoformat()}\n"
        f"Turn: {episode.content}",
        LLM_EXTRACT_SCHEMA,
        name="extract",
    )
    template = base[0] if base else None
    facts = []
    for part, item in enumerate(answer["facts"]):
        text = str(item["text"]).strip()
        if text and template is not None:
            facts.append(replace(template, text=text, part=part))
    return facts


def extract_episode(
    *, session: Session, episode_id: uuid.UUID, settings: Settings, llm: LlmClient | None
) -> list[uuid.UUID]:
    """Create the episode's pending notes (once); return the ids still to embed/decide."""
    episode = claim_episode(session=session, episode_id=episode_id)
    if episode is None or episode.status in ("done", "failed"):
        return []
    # A first attempt on a queued episode has no notes yet: skip the look-ups.
    if episode.status != "queued" or episode.attempts > 0:
        existing = pending_note_ids(session=session, episode_id=episode.id)
        if existing:
            return existing
        if episode.status == "processing" and _has_notes(session, episode.id):
            _finish(episode, episode.decision or "ADD")
            return []
    episode.status = "processing"
    episode.attempts += 1
    facts = extract_facts(
        episode.content,
        role=episode.role,
        speaker=episode.speaker,
        occurred_at=episode.occurred_at,
        metadata=episode.metadata_,
        max_facts_per_episode=MAX_FACTS.get(episode.source, 1),
    )
    if llm is not None and facts:
        facts = _llm_facts(llm, episode, facts)
    if not facts:
        _finish(episode, "NOOP")
        return []
    neighbours = _neighbours(session, episode)
    drafts = [
        construct_note(
            fact,
            role=episode.role,
            agent_id=episode.agent_id,
            explicit=episode.options,
            neighbours=neighbours,
            settings=settings,
        )
        for fact in facts
    ]
    notes = [_pending_note(episode, draft, settings) for draft in drafts]
    session.add_all(notes)
    session.flush()
    session.add_all(NoteSource(note_id=n.id, episode_id=episode.id) for n in notes)
    session.flush()
    return [n.id for n in notes]


def _pending_note(episode: Episode, draft: NoteDraft, settings: Settings) -> Note:
    note_id = uuid.uuid4()
    created = utcnow()
    return Note(
        id=note_id,
        lineage_id=note_id,
        version=1,
        tenant_id=episode.tenant_id,
        user_id=episode.user_id,
        agent_id=episode.agent_id,
        session_id=episode.session_id,
        turn_seq=episode.seq,
        speaker=episode.speaker,
        content=draft.content,
        context=draft.context,
        keywords=list(draft.keywords),
        tags=list(draft.tags),
        kind=draft.kind,
        domain=draft.domain,
        visibility=draft.visibility,
        pinned=draft.pinned,
        status="pending",
        importance=draft.importance,
        metadata_=dict(episode.metadata_),
        occurred_at=episode.occurred_at,
        created_at=created,
        valid_from=created,
        expires_at=draft.ttl_expires_at,
        access_times=[created],
        access_count=1,
        first_access_at=created,
        last_access_at=created,
        half_life_hours=initial_half_life(draft.kind, settings.activation),
        index_text=draft.index_text,
        window_text=draft.window_text,
        embed_text=draft.embed_text,
    )


def _finish(episode: Episode, decision: str) -> None:
    episode.status = "done"
    episode.decision = decision
    episode.processed_at = utcnow()


def finish_episodes(
    *, session: Session, episode_ids: Sequence[uuid.UUID], decisions: dict[uuid.UUID, str]
) -> None:
    """Mark episodes done once none of their notes is still pending (one query)."""
    if not episode_ids:
        return
    still_pending = (
        select(NoteSource.note_id)
        .join(Note, Note.id == NoteSource.note_id)
        .where(NoteSource.episode_id == Episode.id, Note.status == "pending")
        .exists()
    )
    finished = session.scalars(
        select(Episode).where(
            Episode.id.in_(set(episode_ids)), Episode.status == "processing", ~still_pending
        )
    )
    for episode in finished:
        _finish(episode, decisions.get(episode.id, "ADD"))
