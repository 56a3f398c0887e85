"""Window text: a note's own line followed by its neighbour turns' lines, the text the
lexical window route (`bm25_window`) indexes.

    window_text(n) = own line of n, then the lines of the neighbours that may flow into
                     n (memory.access.audience), nearest turn first (previous, next, the
                     one before, the one after), then the date words of n

A line is "Speaker: content", the note's indexed text without its date words. The
neighbours are the ones memory.notes.window chooses for the window vector, so the two
windows of a note always describe the same turns.

Invariants: a note's window text names no note whose content its readers may not read;
writing a changed window text moves its window terms in the user's BM25 statistics in the
same transaction when the note is counted there (active and current), so the statistics
always equal the stored terms.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.notes.construct import make_context
from memory.notes.lexicon import apply_terms, note_terms, window_term_columns
from memory.notes.models import Note
from memory.notes.writes import note_derived_update
from memory.retrieval.text import date_terms

# Derived columns, not an edit: the note keeps its updated_at (the time of its last change
# for sync and export).
_TEXT_COLUMNS = ("window_text", "window_terms", "window_term_count", "window_readers")
# A window's text and who may rank by it (None: any reader of the note).
TextWindow = tuple[str, list[str] | None]


def note_line(
    *, index_text: str | None, content: str, speaker: str | None, occurred_at: datetime | None
) -> str:
    """The note as one window line ("Speaker: content"): its indexed text without the date
    words the write path appended, or the speaker and content for a note indexed
    otherwise (an import from another version)."""
    if index_text and occurred_at is not None:
        dated = " " + date_terms(occurred_at)
        if index_text.endswith(dated):
            return index_text[: -len(dated)]
    return f"{(speaker or 'User').strip() or 'User'}: {content}"


def own_context(note: Any) -> str:
    """The note's own one-line gist, as the write path first gave it (before an LLM
    rewrote it in light of other notes): its speaker and first statement."""
    line = note_line(
        index_text=note.index_text,
        content=note.content,
        speaker=note.speaker,
        occurred_at=note.occurred_at,
    )
    suffix = f": {note.content}"
    label = line[: -len(suffix)] if line.endswith(suffix) else (note.speaker or "User")
    return make_context(label, note.content)


def close_window(note: Note) -> None:
    """A version leaving the searchable notes (closed, deleted) keeps only itself as
    window: nothing ranks by it any more, and its neighbours' text, which their later
    changes of audience or erasure would no longer reach, leaves with it. Its terms are
    not counted in the statistics (the caller unindexed it), so only columns change."""
    line = note_line(
        index_text=note.index_text,
        content=note.content,
        speaker=note.speaker,
        occurred_at=note.occurred_at,
    )
    if note.occurred_at is not None:
        note.window_text = compose_window_text(line, (), note.occurred_at)
    note.window_embedding = note.embedding
    note.window_readers = None
    apply_terms(note, note_terms(note))


def compose_window_text(
    own_line: str, neighbour_lines: Sequence[str], occurred_at: datetime
) -> str:
    """The window text of a note: its own line, the neighbours' lines, its date words."""
    lines = [own_line, *(line.strip() for line in neighbour_lines if line and line.strip())]
    return "\n".join(lines) + f" {date_terms(occurred_at)}"


def store_window_texts(
    *, session: Session, rows: dict[uuid.UUID, Any], texts: dict[uuid.UUID, TextWindow]
) -> None:
    """Write changed window texts of stored notes and who may rank by them, with their
    window terms (and their statistics when counted). `rows[id]` has the note's tenant_id,
    user_id, status and stored window_text. Written in id order, as row locks are taken."""
    if not texts:
        return
    stored = _stored_window_terms(session, sorted(texts))
    values = []
    for note_id in sorted(texts):
        row = rows[note_id]
        text, gate = texts[note_id]
        old_terms, old_count = stored.get(note_id, (None, 0))
        columns = window_term_columns(
            session=session,
            tenant_id=row.tenant_id,
            user_id=row.user_id,
            old_terms=old_terms,
            old_count=old_count,
            new_text=text,
            counted=row.status == "active",
        )
        values.append({"note_id": note_id, **columns, "window_readers": gate})
    note_derived_update(_TEXT_COLUMNS).run_many(session, values)
    for value in values:
        loaded = session.identity_map.get(session.identity_key(Note, value["note_id"]))  # type: ignore[arg-type]
        if loaded is not None:
            for column in _TEXT_COLUMNS:
                set_committed_value(loaded, column, value[column])


def _stored_window_terms(
    session: Session, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, tuple[str | None, int]]:
    """The stored window terms and their count of the notes whose window text changes:
    what their statistics hold now (memory.notes.lexicon)."""
    statement = select(Note.id, Note.window_terms, Note.window_term_count).where(
        Note.id.in_(note_ids)
    )
    return {
        row.id: (row.window_terms, row.window_term_count or 0) for row in session.execute(statement)
    }
