"""Stages 4-5 of the write path: decide each embedded note (stage 3: memory.notes.embed).

Invariants: a note's windows (vector and text) are derived from its own and its neighbours'
when it is decided (memory.notes.window); a note is decided only while `pending` (its
lock is awaited, then the state re-checked), so a redelivered task is a no-op; UPDATE
and DELETE close the old version (valid_to, superseded_by) and never overwrite it; a
note's terms are written, and enter the BM25 statistics, exactly when it becomes active.
The notes of a batch are decided one after the other, each against the active notes at
that moment, the batch's earlier decisions included (BatchCandidates), with one
nearest-neighbour query per user of the batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.access.audience import Audience, audience_key
from memory.activation.model import record_access
from memory.clients.llm import LlmClient, LlmOutputError
from memory.config import Settings
from memory.db import CompiledStatement
from memory.episodes.pipeline import finish_episodes
from memory.links.models import Link
from memory.notes.decide import Decision, decide_by_rules, decide_with_llm
from memory.notes.lexicon import activate_note_terms, unindex_note_terms
from memory.notes.models import Note, NoteSource
from memory.notes.similar import BatchCandidates
from memory.notes.vectors import VectorParam
from memory.notes.window import (
    WindowChanges,
    WindowSeeds,
    changed_windows,
    lock_note_windows,
    refresh_windows,
    store_windows,
)
from memory.notes.window_text import TextWindow, close_window
from memory.notes.writes import note_update
from memory.ops.audit import record_event
from memory.types import id_in_param, utcnow

SIMILAR_LIMIT = 5


@dataclass(frozen=True)
class Outcome:
    note_id: uuid.UUID
    decision: Decision
    active_id: uuid.UUID | None  # the note that now carries the fact (None after DELETE)


def decide_notes(
    *,
    session: Session,
    note_ids: Sequence[uuid.UUID],
    settings: Settings,
    llm: LlmClient | None,
    invalid: dict[uuid.UUID, LlmOutputError] | None = None,
) -> list[Outcome]:
    """Decide every still-pending, embedded note among `note_ids`; finish their episodes;
    refresh the window vectors of their turns and the turns around them.

    A note whose model answer is invalid even after a repair raises LlmOutputError, or,
    given `invalid`, is left pending and recorded there while the others are decided:
    a batch holds several users' notes, and one bad answer must not fail the rest."""
    # Session locks before note locks: a concurrent refresh of a neighbouring batch holds
    # rows this claim would otherwise skip (memory.notes.window).
    seeds = lock_note_windows(session=session, note_ids=note_ids)
    # Waits rather than skips: an embedding claim may hold a just-embedded note for a
    # moment (PostgreSQL keeps the lock on a row whose re-check failed), and a skipped
    # note would wait for the stale sweep. A second decide of the same notes waits here,
    # then finds them no longer pending.
    notes = list(
        session.scalars(
            select(Note)
            .where(Note.id.in_(note_ids), Note.status == "pending", Note.embedding.is_not(None))
            .order_by(Note.created_at)
            .with_for_update()
        )
    )
    if not notes:  # all decided already (a redelivered task): nothing left to do
        return []
    windows = _batch_windows(session, seeds, notes)
    outcomes: list[Outcome] = []
    episode_decisions: dict[uuid.UUID, str] = {}
    sources = _sources_by_note(session, [note.id for note in notes])
    batch = BatchCandidates(session, notes, SIMILAR_LIMIT)
    for note in notes:
        episode_ids = sources.get(note.id, [])
        # A merge or an update carries one note's content to the other's readers: only
        # within one audience (memory.access.audience), and only between notes of one
        # trust and review state (memory.trust).
        own = (audience_key(Audience.of(note)), (note.trust, note.review))
        candidates = [
            c for c in batch.for_note(note) if (audience_key(c.audience), c.standing) == own
        ]
        if llm is not None:
            try:
                decision = decide_with_llm(llm, note.content, candidates)
            except LlmOutputError as exc:
                if invalid is None:
                    raise
                invalid[note.id] = exc
                continue
        else:
            decision = decide_by_rules(note.content, note.speaker, candidates, settings.pipeline)
        active_id = _apply(session, note, decision, episode_ids, windows)
        batch.record(note, decision)
        outcomes.append(Outcome(note.id, decision, active_id))
        for episode_id in episode_ids:
            episode_decisions.setdefault(episode_id, decision.action)
    session.flush()
    finish_episodes(
        session=session,
        episode_ids=list(episode_decisions),
        decisions=episode_decisions,
    )
    if any(outcome.decision.action != "ADD" for outcome in outcomes):
        # A merged (NOOP), closed (UPDATE) or deleted note left its neighbours' windows.
        # After ADDs alone the neighbours are those the windows above were computed from.
        refresh_windows(session=session, seeds=seeds)
    return outcomes


def _sources_by_note(
    session: Session, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    sources: dict[uuid.UUID, list[uuid.UUID]] = {}
    if note_ids:
        for row in _sources_statement().rows(session, {"source_note_ids": note_ids}):
            sources.setdefault(row.note_id, []).append(row.episode_id)
    return sources


@cache
def _sources_statement() -> CompiledStatement:
    return CompiledStatement(
        select(NoteSource.note_id, NoteSource.episode_id).where(
            id_in_param(NoteSource.note_id, "source_note_ids")
        )
    )


def _batch_windows(session: Session, seeds: WindowSeeds, notes: list[Note]) -> WindowChanges:
    """New windows of the batch's notes, to be set with their decisions (so each row is
    written once here); those of neighbours outside the batch are written now."""
    changes = changed_windows(session=session, seeds=seeds)
    batch = {note.id for note in notes}
    store_windows(session=session, changes=changes.without(batch))
    outside = set(changes.rows) - batch
    return changes.without(outside)


def _apply(
    session: Session,
    note: Note,
    decision: Decision,
    episode_ids: list[uuid.UUID],
    windows: WindowChanges,
) -> uuid.UUID | None:
    """Apply the decision; the note's new windows (if changed) are written with it."""
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
        _audit(session, target, "note.reinforced", decision, episode_ids)
        return target.id
    if decision.action in ("UPDATE", "DELETE") and target is not None:
        _close(session, target, now, superseded_by=note.id if decision.action == "UPDATE" else None)
        if decision.action == "DELETE":
            note.status = "deleted"
            note.valid_to = now
            close_window(note)
            _audit(session, target, "note.invalidated", decision, episode_ids)
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
    _activate(session, note, windows.vectors.get(note.id), windows.texts.get(note.id))
    action = "note.created" if decision.action != "UPDATE" else "note.updated"
    _audit(session, note, action, decision, episode_ids)
    return note.id


def _activate(
    session: Session, note: Note, window: np.ndarray | None, text: TextWindow | None
) -> None:
    """The note becomes active with its terms (and new windows) in one compiled UPDATE;
    the loaded object is kept in step, so the ORM does not write these columns again."""
    if text is not None:
        set_committed_value(note, "window_text", text[0])
        set_committed_value(note, "window_readers", text[1])
    values: dict[str, Any] = {
        "status": "active",
        "updated_at": utcnow(),
        **activate_note_terms(session=session, note=note),
        "window_text": note.window_text,
        "window_readers": note.window_readers,
    }
    bound = dict(values)
    if window is not None:
        values["window_embedding"], bound["window_embedding"] = window, VectorParam(window)
    note_update(tuple(bound)).run(session, {"note_id": note.id, **bound})
    for column, value in values.items():
        set_committed_value(note, column, value)


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
    close_window(note)
    # Flush the new row first so the superseded_by foreign key points at a stored note.
    session.flush()


def _audit(
    session: Session, note: Note, action: str, decision: Decision, episode_ids: list[uuid.UUID]
) -> None:
    """The decision's event; it names the deciding turns (the turn journal reads them)."""
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
            "episodes": [str(e) for e in episode_ids],
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
    """Events for the per-user stream, built inside the transaction, published after it.

    Each names the note that now carries the fact, or after a DELETE the note whose
    validity was closed (the deciding note itself is stored deleted, never shown)."""
    payloads: list[dict[str, object]] = []
    for outcome in outcomes:
        subject = outcome.active_id or outcome.decision.target_id or outcome.note_id
        note = session.get(Note, subject)
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
