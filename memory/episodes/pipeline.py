"""Stages 1-2 of the write path: extract facts from an episode and construct pending notes.

Invariants: an episode is claimed with FOR UPDATE SKIP LOCKED, so two deliveries of the
same task never work on it at once; its pending notes are created once (a re-run returns
the ones already there); an episode that yields no fact is `done` with decision NOOP and
stays stored. With an LLM, invalid output after one repair raises LlmOutputError: the task
dead-letters it and the episode is kept as `failed`, never silently dropped.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from functools import cache
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import ARRAY, String, bindparam, func, insert, literal, select, update
from sqlalchemy.orm import Session

from memory.activation.model import initial_half_life
from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.db import CompiledStatement
from memory.episodes.extraction import ExtractedFact, extract_facts
from memory.episodes.models import Episode
from memory.episodes.worth import capture_skip_reason, content_to_remember
from memory.notes.construct import NoteDraft, construct_note
from memory.notes.models import Note, NoteSource
from memory.trust.policy import assess_note, drops_capture, kind_for_trust
from memory.types import NOTE_KINDS, Timestamp, Uuid, utcnow

# Promoted items and synced files may hold several facts; chat turns stay whole
# (retrieval-notes.md: one unit per turn keeps the evidence together), and an explicit
# write is one memory, stored as given.
MAX_FACTS = {"capture": 1, "explicit": 1, "promotion": 4, "sync": 4}


def _max_facts(episode: Episode, settings: Settings) -> int:
    """How many notes the episode may become: its source's number, or for a long turn
    (not an explicit write, stored as given) one passage per ~passage_chars."""
    base = MAX_FACTS.get(episode.source, 1)
    size = settings.pipeline.passage_chars
    if episode.source == "explicit" or len(episode.content) <= 2 * size:
        return base
    return max(base, min(math.ceil(len(episode.content) / size), settings.pipeline.max_passages))


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
    if drops_capture(settings.trust.level(episode.origin), settings.trust):
        _finish(episode, "DROP")
        return []
    skipped = capture_skip_reason(session=session, episode=episode, settings=settings)
    if skipped is not None:
        _finish(episode, skipped)
        return []
    facts = extract_facts(
        content_to_remember(episode, settings),
        role=episode.role,
        speaker=episode.speaker,
        occurred_at=episode.occurred_at,
        metadata=episode.metadata_,
        max_facts_per_episode=_max_facts(episode, settings),
        as_written=episode.source == "explicit",
    )
    if llm is not None and facts and episode.source != "explicit":
        facts = _llm_facts(llm, episode, facts)
    if not facts:
        _finish(episode, "NOOP")
        return []
    drafts = [
        construct_note(
            fact,
            role=episode.role,
            agent_id=episode.agent_id,
            explicit=episode.options,
            settings=settings,
        )
        for fact in facts
    ]
    drafts = [_with_trust_kind(episode, draft, settings) for draft in drafts]
    rows = [_pending_row(episode, draft, settings) for draft in drafts]
    _insert_note_statement(tuple(rows[0])).run_many(
        session, [{**row, "source_episode_id": episode.id} for row in rows]
    )
    return [row["id"] for row in rows]


def _with_trust_kind(episode: Episode, draft: NoteDraft, settings: Settings) -> NoteDraft:
    kind = kind_for_trust(
        draft.kind,
        settings.trust.level(episode.origin),
        role=episode.role,
        explicit_kind="kind" in episode.options,
    )
    return draft if kind == draft.kind else replace(draft, kind=kind)


def _pending_row(episode: Episode, draft: NoteDraft, settings: Settings) -> dict[str, Any]:
    """Every column of a new pending note (the statement binds them all; no defaults)."""
    note_id = uuid.uuid4()
    created = utcnow()
    trust = assess_note(
        content=draft.content,
        origin=episode.origin,
        origin_ref=episode.origin_ref,
        kind=draft.kind,
        agent_id=episode.agent_id,
        trust_settings=settings.trust,
        candidate_settings=settings.candidates,
    )
    return {
        **trust.columns(),
        "id": note_id,
        "lineage_id": note_id,
        "version": 1,
        "tenant_id": episode.tenant_id,
        "user_id": episode.user_id,
        "agent_id": episode.agent_id,
        "session_id": episode.session_id,
        "turn_seq": episode.seq,
        "speaker": episode.speaker,
        "content": draft.content,
        "context": draft.context,
        "keywords": list(draft.keywords),
        "tags": list(draft.tags),
        "kind": draft.kind,
        "domain": draft.domain,
        "visibility": draft.visibility,
        "pinned": draft.pinned,
        "status": "pending",
        "importance": draft.importance,
        "metadata": Jsonb(dict(episode.metadata_)),
        "occurred_at": episode.occurred_at,
        "created_at": created,
        "updated_at": created,
        "valid_from": created,
        "expires_at": draft.ttl_expires_at,
        "access_times": [created],
        "access_count": 1,
        "first_access_at": created,
        "last_access_at": created,
        "half_life_hours": initial_half_life(draft.kind, settings.activation),
        "index_text": draft.index_text,
        "window_text": draft.window_text,
        "embed_text": draft.embed_text,
        "term_count": 0,
        "window_term_count": 0,
    }


@cache
def _insert_note_statement(columns: tuple[str, ...]) -> CompiledStatement:
    # The note and its provenance in one statement (the source row's foreign key is
    # checked at the end of the statement, when the note is there).
    notes, sources = Note.__table__, NoteSource.__table__
    note = (
        insert(notes)
        .values({name: bindparam(name, type_=notes.c[name].type) for name in columns})
        .returning(notes.c.id, notes.c.created_at)
        .cte("note")
    )
    provenance = select(
        note.c.id,
        bindparam("source_episode_id", type_=Uuid),
        literal("extracted"),
        note.c.created_at,
    )
    return CompiledStatement(
        insert(sources).from_select(["note_id", "episode_id", "relation", "created_at"], provenance)
    )


def _finish(episode: Episode, decision: str) -> None:
    episode.status = "done"
    episode.decision = decision
    episode.processed_at = utcnow()


def finish_episodes(
    *, session: Session, episode_ids: Sequence[uuid.UUID], decisions: dict[uuid.UUID, str]
) -> None:
    """Mark episodes done once none of their notes is still pending (one statement);
    an episode that is not `processing` is left as it is."""
    if not episode_ids:
        return
    ids = sorted(set(episode_ids))  # one row lock order for concurrent deciders
    now = utcnow()
    _finish_statement().run(
        session,
        {
            "finish_ids": ids,
            "finish_decisions": [decisions.get(i, "ADD") for i in ids],
            "finish_at": now,
        },
    )
    for episode_id in ids:  # objects loaded here would otherwise keep their old state
        loaded = session.identity_map.get(session.identity_key(Episode, episode_id))  # type: ignore[arg-type]
        if loaded is not None:
            session.expire(loaded)


@cache
def _finish_statement() -> CompiledStatement:
    given = select(
        func.unnest(bindparam("finish_ids", type_=ARRAY(Uuid))).label("id"),
        func.unnest(bindparam("finish_decisions", type_=ARRAY(String))).label("decision"),
    ).subquery()
    still_pending = (
        select(NoteSource.note_id)
        .join(Note, Note.id == NoteSource.note_id)
        .where(NoteSource.episode_id == Episode.id, Note.status == "pending")
        .exists()
    )
    at = bindparam("finish_at", type_=Timestamp)
    return CompiledStatement(
        update(Episode)
        .where(Episode.id == given.c.id, Episode.status == "processing", ~still_pending)
        .values(status="done", decision=given.c.decision, processed_at=at, updated_at=at)
    )
