"""Rebuild what was derived under an earlier rule: notes whose `derived_version` is below
DERIVED_VERSION (migration 0012) get windows, evolved keywords, tags and context that
satisfy memory.access.audience, so leaks stored before the rule are gone after upgrade.

One batch takes a few sessions that hold such notes, and in each:
- recomputes every current note's windows (vector and text, the BM25 statistics moved
  with the text), as the decide stage computes them;
- gives every closed or deleted version its own line and vector as window (no reader
  searches them, but history and export show them);
- stores every current note's terms as the analyser of this version makes them (own
  and window text, the BM25 statistics moved with them: migration 0016 marks the notes
  whose terms the analyser's languages change);
- keeps a keyword, tag or context line only where it is the note's own or could have come
  from a linked note that may flow into it, and records those as contributions, so a
  later withdrawal finds them (memory.links.evolution);
- marks the notes rebuilt.

Invariants: idempotent (a rebuilt note is at DERIVED_VERSION and never taken again);
resumable (each batch commits on its own; a killed run leaves whole batches done); safe
beside the pipeline (the same session advisory locks as the decide stage).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import flag_modified

from memory.access.audience import Audience, may_flow
from memory.episodes.models import Episode
from memory.links.evolution import record_contributions
from memory.links.models import Link
from memory.notes.construct import extract_keywords
from memory.notes.lexicon import reanalyse_note_terms
from memory.notes.models import Note, NoteSource
from memory.notes.rules import rule_tags
from memory.notes.window import WindowSeeds, lock_note_windows, refresh_windows
from memory.notes.window_text import close_window, note_line, own_context
from memory.retrieval.text import content_tokens, stem
from memory.types import DERIVED_VERSION

STALE = Note.derived_version < DERIVED_VERSION


@dataclass(frozen=True)
class RebuildBatch:
    sessions: int
    notes: int


def count_stale_derived(*, session: Session, tenant_id: str | None = None) -> int:
    query = select(func.count()).select_from(Note).where(STALE)
    if tenant_id:
        query = query.where(Note.tenant_id == tenant_id)
    return int(session.scalar(query) or 0)


def rebuild_derived_batch(
    *, session: Session, sessions: int = 20, tenant_id: str | None = None
) -> RebuildBatch:
    """Rebuild the stale notes of up to `sessions` conversations (notes without a session
    count as one); see the module docstring."""
    places = select(Note.tenant_id, Note.user_id, Note.session_id).where(STALE).distinct()
    if tenant_id:
        places = places.where(Note.tenant_id == tenant_id)
    keys = session.execute(places.limit(sessions)).all()
    if not keys:
        return RebuildBatch(0, 0)
    clause = or_(
        *(
            (Note.tenant_id == k.tenant_id)
            & (Note.user_id == k.user_id)
            & (Note.session_id == k.session_id if k.session_id else Note.session_id.is_(None))
            for k in keys
        )
    )
    stale_ids = list(session.scalars(select(Note.id).where(STALE, clause).order_by(Note.id)))
    seeds = lock_note_windows(session=session, note_ids=stale_ids)
    refresh_windows(session=session, seeds=_whole_sessions(session, seeds))
    notes = list(
        session.scalars(
            select(Note).where(Note.id.in_(stale_ids)).order_by(Note.id).with_for_update()
        )
    )
    edited = {note.id: note.updated_at for note in notes}
    for note in notes:
        if note.valid_to is not None or note.status == "deleted":
            close_window(note)
        elif note.status in ("active", "archived"):
            reanalyse_note_terms(session=session, note=note, counted=note.status == "active")
    _clean_evolved(session, notes)
    for note in notes:
        # Derived fields, not an edit: updated_at stays the time of the last change.
        note.updated_at = edited[note.id]
        flag_modified(note, "updated_at")
    session.flush()
    session.execute(
        update(Note)
        .where(Note.id.in_(stale_ids))
        .values(derived_version=DERIVED_VERSION, updated_at=Note.updated_at)
    )
    return RebuildBatch(len(keys), len(stale_ids))


def _whole_sessions(session: Session, seeds: WindowSeeds) -> WindowSeeds:
    """Seeds naming every turn of the seeds' sessions, so every current note is rebuilt."""
    turns: dict[tuple[str, str, str], frozenset[int]] = {}
    for key in seeds.turns:
        tenant_id, user_id, session_id = key
        found = session.scalars(
            select(Note.turn_seq)
            .where(
                Note.tenant_id == tenant_id,
                Note.user_id == user_id,
                Note.session_id == session_id,
                Note.turn_seq.is_not(None),
            )
            .distinct()
        )
        turns[key] = frozenset(int(t) for t in found)
    return WindowSeeds(turns, seeds.unplaced)


def _clean_evolved(session: Session, notes: list[Note]) -> None:
    """Keep only own values and values a linked note that may flow in could have given."""
    linked = _linked(session, [n.id for n in notes])
    explicit = _explicit_tags(session, [n.id for n in notes])
    own: dict[uuid.UUID, set[str]] = {}

    def own_words(note: Note) -> set[str]:
        if note.id not in own:
            own[note.id] = _own_keywords(note)
        return own[note.id]

    rows: list[tuple[uuid.UUID, str, str, uuid.UUID, Any]] = []
    for note in notes:
        target = Audience.of(note)
        others = linked.get(note.id, [])
        allowed = [b for b in others if may_flow(Audience.of(b), target)]
        refused = [b for b in others if not may_flow(Audience.of(b), target)]
        givers = {b.id: own_words(b) for b in allowed}
        keywords = [
            k
            for k in note.keywords or []
            if k in own_words(note) or any(k in words for words in givers.values())
        ]
        rows += [
            (note.id, "keyword", k, b, note)
            for k in keywords
            if k not in own_words(note)
            for b, words in givers.items()
            if k in words
        ]
        own_tags = set(rule_tags([stem(t) for t in content_tokens(note.content)], note.kind))
        own_tags |= explicit.get(note.id, set())
        tags = [
            t
            for t in note.tags or []
            if t in own_tags or not any(t in (b.tags or []) for b in refused)
        ]
        rows += [
            (note.id, "tag", t, b.id, note)
            for t in tags
            if t not in own_tags
            for b in allowed
            if t in (b.tags or [])
        ]
        if keywords != list(note.keywords or []):
            note.keywords = keywords
        if tags != list(note.tags or []):
            note.tags = tags
        if refused and note.kind != "knowledge" and note.context != own_context(note):
            note.context = own_context(note)
    session.flush()
    record_contributions(session, rows)


def _own_keywords(note: Note) -> set[str]:
    if note.kind == "knowledge":  # a summary's keywords: kept unless a refused note had them
        return set(note.keywords or [])
    line = note_line(
        index_text=note.index_text,
        content=note.content,
        speaker=note.speaker,
        occurred_at=note.occurred_at,
    )
    label = line[: -len(note.content) - 2] if line.endswith(f": {note.content}") else ""
    return set(extract_keywords(note.content, exclude=[label] if label else []))


def _linked(session: Session, note_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Note]]:
    """The notes each of `note_ids` has a `related` link with (either direction)."""
    pairs = session.execute(
        select(Link.source_id, Link.target_id).where(
            Link.kind == "related",
            or_(Link.source_id.in_(note_ids), Link.target_id.in_(note_ids)),
        )
    ).all()
    wanted = set(note_ids)
    others: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)
    for source, target in pairs:
        if source in wanted:
            others[source].add(target)
        if target in wanted:
            others[target].add(source)
    ids = sorted({o for group in others.values() for o in group})
    notes = {n.id: n for n in session.scalars(select(Note).where(Note.id.in_(ids)))} if ids else {}
    return {k: [notes[o] for o in sorted(v) if o in notes] for k, v in others.items()}


def _explicit_tags(session: Session, note_ids: list[uuid.UUID]) -> dict[uuid.UUID, set[str]]:
    """Tags the capture asked for (episode options), by note."""
    rows = session.execute(
        select(NoteSource.note_id, Episode.options)
        .join(Episode, Episode.id == NoteSource.episode_id)
        .where(NoteSource.note_id.in_(note_ids))
    )
    out: dict[uuid.UUID, set[str]] = defaultdict(set)
    for note_id, options in rows:
        tags = (options or {}).get("tags") or []
        out[note_id] |= {str(t).strip() for t in tags if isinstance(t, str) and t.strip()}
    return out
