"""Forgetting a memory: its content leaves every place it reached (memory.erasure.catalog).

What forgetting note N removes (N's lineage: every version of it):
- the versions' rows (and with them their links, provenance, conflicts and mirrors), each
  leaving a tombstone: ids, who, when, why, no content;
- every knowledge note consolidated from any version (the next sleep cycle consolidates
  the rest again);
- what evolution copied from them into other notes (memory.links.evolution);
- the source episodes' text: the whole text when no other note came from the episode,
  else the part the forgotten version came from (the whole text when that part cannot be
  told apart); the episode row stays, empty, so a capture retried with its idempotency
  key is not stored again;
- the dead letters of fully erased episodes, and the content of the audit events about
  the versions (ids, actor, action and time stay);
- the turn journal's injection entries naming any version (memory.journal);
- the windows of the neighbours, rebuilt without it, and the BM25 statistics; a term no
  note holds any more leaves the lexicon (memory.notes.lexicon);
- the user's transactive index, rebuilt.
Outside the database (`purge_outside`, after the commit): working-memory items whose text
the forgotten turns held, and the note files of filesystem sync.

Invariants: one transaction; the caller commits; a second call for a forgotten id is a
NotFoundError (nothing is left to find).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.commons.service import refresh_transactive_index
from memory.episodes.extraction import extract_facts
from memory.episodes.models import Episode
from memory.journal.service import forget_journal_entries
from memory.links.evolution import withdraw_contributions
from memory.links.models import Link
from memory.notes.lexicon import unindex_note_terms
from memory.notes.models import Note, NoteSource, Tombstone
from memory.notes.service import get_visible_note
from memory.notes.window import lock_note_windows, refresh_windows
from memory.ops.audit import record_event
from memory.ops.models import AuditEvent, DeadLetter
from memory.types import utcnow

ERASED_DECISION = "ERASED"


@dataclass
class ForgetReport:
    """What one forget removed (ids only: a report holds no content)."""

    tenant_id: str
    user_id: str
    note_ids: list[uuid.UUID] = field(default_factory=list)
    knowledge_ids: list[uuid.UUID] = field(default_factory=list)
    lineage_ids: list[uuid.UUID] = field(default_factory=list)
    episodes_erased: list[uuid.UUID] = field(default_factory=list)
    episodes_redacted: list[uuid.UUID] = field(default_factory=list)
    notes_changed: int = 0  # other notes whose copied words were withdrawn
    # Outside the database, for `purge_outside`: the forgotten turns' texts.
    texts: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "versions": len(self.note_ids),
            "knowledge_notes": len(self.knowledge_ids),
            "episodes_erased": len(self.episodes_erased),
            "episodes_redacted": len(self.episodes_redacted),
            "notes_changed": self.notes_changed,
        }


@dataclass(frozen=True)
class MemoryRef:
    """Which memory a forget is about: its user and lineage, and the id it was asked by."""

    tenant_id: str
    user_id: str
    lineage_id: uuid.UUID
    note_id: uuid.UUID
    agent_id: str | None  # the forgetting agent (None: user level)


def locate_memory(*, session: Session, viewer: Viewer, note_id: uuid.UUID) -> MemoryRef:
    """The memory `note_id` (any of its versions) if `viewer` may see it; NotFoundError
    otherwise. The API checks this in the caller's row-level-secured transaction and
    erases in one of its own (the erasure touches tables the API role only appends to)."""
    note = get_visible_note(session=session, viewer=viewer, note_id=note_id)
    return MemoryRef(note.tenant_id, note.user_id, note.lineage_id, note_id, viewer.agent_id)


def forget_memory(
    *, session: Session, viewer: Viewer, note_id: uuid.UUID, actor: str, reason: str | None
) -> ForgetReport:
    """Forget the memory `note_id` (any of its versions) that `viewer` may see."""
    ref = locate_memory(session=session, viewer=viewer, note_id=note_id)
    return forget_located(session=session, ref=ref, actor=actor, reason=reason)


def forget_located(
    *, session: Session, ref: MemoryRef, actor: str, reason: str | None
) -> ForgetReport:
    """Erase the located memory's lineage and record who forgot it and why."""
    report = erase_lineages(
        session=session,
        tenant_id=ref.tenant_id,
        user_id=ref.user_id,
        lineage_ids=[ref.lineage_id],
        actor=actor,
        reason=f"forgotten: {reason}" if reason else "forgotten",
    )
    record_event(
        session=session,
        tenant_id=ref.tenant_id,
        user_id=ref.user_id,
        actor=actor,
        action="note.forgotten",
        entity_type="note",
        entity_id=str(ref.note_id),
        reason=reason,
        data={**report.summary(), "agent_id": ref.agent_id},
    )
    return report


def erase_lineages(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    lineage_ids: list[uuid.UUID],
    actor: str,
    reason: str,
    now: datetime | None = None,
) -> ForgetReport:
    """Erase every version of the lineages and what was derived from them (see the
    module docstring); also used for memories the decay sweep prunes or expires."""
    report = ForgetReport(tenant_id, user_id, lineage_ids=sorted(set(lineage_ids)))
    scope = (Note.tenant_id == tenant_id, Note.user_id == user_id)
    versions = list(
        session.scalars(select(Note.id).where(*scope, Note.lineage_id.in_(lineage_ids)))
    )
    knowledge = _knowledge_from(session, versions, scope)
    report.note_ids, report.knowledge_ids = versions, knowledge
    erased = sorted({*versions, *knowledge})
    if not erased:
        return report
    seeds = lock_note_windows(session=session, note_ids=erased)
    report.notes_changed = withdraw_contributions(session=session, source_ids=erased)
    notes = list(session.scalars(select(Note).where(Note.id.in_(erased)).with_for_update()))
    unindex_note_terms(
        session=session, notes=[n for n in notes if n.status == "active" and n.valid_to is None]
    )
    # A knowledge note cites its sources' turns: forgetting it leaves those to them.
    own = [n for n in notes if n.id in set(versions) and n.kind != "knowledge"]
    _erase_episodes(session, report, own, set(erased))
    _scrub_events(session, tenant_id, user_id, erased)
    forget_journal_entries(session=session, tenant_id=tenant_id, user_id=user_id, note_ids=erased)
    _tombstones(session, report, notes, actor, reason, now or utcnow())
    session.execute(
        delete(Note).where(Note.id.in_(erased)), execution_options={"synchronize_session": False}
    )
    for note in notes:
        session.expunge(note)
    session.flush()
    refresh_windows(session=session, seeds=seeds)
    refresh_transactive_index(session=session, tenant_id=tenant_id, user_id=user_id)
    return report


def _knowledge_from(session: Session, note_ids: list[uuid.UUID], scope: Any) -> list[uuid.UUID]:
    """Every version of the knowledge notes consolidated from any of `note_ids`."""
    if not note_ids:
        return []
    direct = select(Link.source_id).where(Link.kind == "consolidates", Link.target_id.in_(note_ids))
    lineages = select(Note.lineage_id).where(Note.id.in_(direct), Note.kind == "knowledge")
    return list(session.scalars(select(Note.id).where(*scope, Note.lineage_id.in_(lineages))))


def _erase_episodes(
    session: Session, report: ForgetReport, versions: list[Note], erased: set[uuid.UUID]
) -> None:
    """Erase or redact the episodes the forgotten versions came from."""
    ids = [v.id for v in versions]
    if not ids:
        return
    episode_ids = set(
        session.scalars(select(NoteSource.episode_id).where(NoteSource.note_id.in_(ids)))
    )
    if not episode_ids:
        return
    shared = set(
        session.scalars(
            select(NoteSource.episode_id).where(
                NoteSource.episode_id.in_(episode_ids), NoteSource.note_id.not_in(erased)
            )
        )
    )
    contents = {v.content for v in versions}
    episodes = session.scalars(
        select(Episode).where(Episode.id.in_(sorted(episode_ids))).with_for_update()
    )
    for episode in episodes:
        report.texts.append(episode.content)
        kept = _redacted(episode, contents) if episode.id in shared else None
        if kept:
            episode.content = kept
            report.episodes_redacted.append(episode.id)
            continue
        episode.content, episode.metadata_, episode.options = "", {}, {}
        episode.error, episode.decision = None, ERASED_DECISION
        report.episodes_erased.append(episode.id)
    if report.episodes_erased:
        session.execute(delete(DeadLetter).where(DeadLetter.episode_id.in_(report.episodes_erased)))


def _redacted(episode: Episode, contents: set[str]) -> str | None:
    """The episode's text without the parts the forgotten facts came from; None when no
    part can be told apart (then the whole text goes)."""
    facts = extract_facts(
        episode.content,
        role=episode.role,
        speaker=episode.speaker,
        occurred_at=episode.occurred_at,
        metadata=episode.metadata_,
        max_facts_per_episode=8,
    )
    parts = [f.original for f in facts if f.text in contents and f.original]
    if not parts:
        return None
    # Chunks are cut from the text with its whitespace collapsed.
    text = " ".join(episode.content.split())
    for part in parts:
        cut = " ".join(part.split())
        if cut not in text:
            return None
        text = text.replace(cut, "", 1)
    text = " ".join(text.split())
    return text or None


def _scrub_events(
    session: Session, tenant_id: str, user_id: str, note_ids: list[uuid.UUID]
) -> None:
    """Audit events about the erased notes keep who, what and when; not what they said."""
    session.execute(
        update(AuditEvent)
        .where(
            AuditEvent.tenant_id == tenant_id,
            AuditEvent.user_id == user_id,
            AuditEvent.entity_type == "note",
            AuditEvent.entity_id.in_([str(i) for i in note_ids]),
        )
        .values(data={}, reason=None)
    )


def _tombstones(
    session: Session,
    report: ForgetReport,
    notes: list[Note],
    actor: str,
    reason: str,
    now: datetime,
) -> None:
    rows = [
        {
            "note_id": note.id,
            "tenant_id": report.tenant_id,
            "user_id": report.user_id,
            "reason": reason
            if note.id in set(report.note_ids)
            else f"{reason} (derived knowledge)",
            "content_hash": None,
            "actor": actor,
            "deleted_at": now,
        }
        for note in notes
    ]
    session.execute(pg_insert(Tombstone).values(rows).on_conflict_do_nothing())
