"""Write-time lexical indexing: analysed terms as a tsvector, and per-user BM25 statistics.

Invariants: a note's terms are counted in `lexicon`/`lexicon_totals` exactly while it is
active and current (valid_to IS NULL); `index_note_terms` and `unindex_note_terms` are the
only writers, called on activation and on closing/archiving. Terms are sorted before the
upsert so concurrent workers lock rows in the same order and never deadlock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.notes.models import Note
from memory.retrieval.text import analyse

FIELDS = ("own", "window")
MAX_POSITION = 16383  # PostgreSQL's largest tsvector position


def tsvector_literal(terms: list[str]) -> str:
    """A tsvector literal keeping every occurrence's position, so tf is recoverable."""
    positions: dict[str, list[int]] = {}
    for index, term in enumerate(terms, start=1):
        positions.setdefault(term, []).append(min(index, MAX_POSITION))
    parts = []
    for term, where in positions.items():
        escaped = term.replace("\\", "\\\\").replace("'", "''")
        parts.append(f"'{escaped}':{','.join(str(p) for p in where[:256])}")
    return " ".join(parts)


def note_terms(note: Note) -> dict[str, list[str]]:
    return {
        "own": analyse(note.index_text or note.content),
        "window": analyse(note.window_text or ""),
    }


def apply_terms(note: Note, terms: dict[str, list[str]]) -> None:
    """Set the note's tsvector columns and lengths from analysed terms (raw SQL literal)."""
    note.index_terms = tsvector_literal(terms["own"])
    note.window_terms = tsvector_literal(terms["window"])
    note.term_count = len(terms["own"])
    note.window_term_count = len(terms["window"])


def _adjust(session: Session, notes: Iterable[Note], sign: int) -> None:
    counts: Counter[tuple[str, str, str, str]] = Counter()
    totals: Counter[tuple[str, str, str]] = Counter()
    lengths: Counter[tuple[str, str, str]] = Counter()
    for note in notes:
        terms = note_terms(note)
        for field in FIELDS:
            key = (note.tenant_id, note.user_id, field)
            totals[key] += 1
            lengths[key] += len(terms[field])
            for term in set(terms[field]):
                counts[(*key, term)] += 1
    if counts:
        session.execute(
            text(
                "INSERT INTO lexicon (tenant_id, user_id, field, term, doc_count) "
                "VALUES (:tenant_id, :user_id, :field, :term, :delta) "
                "ON CONFLICT (tenant_id, user_id, field, term) "
                "DO UPDATE SET doc_count = GREATEST(0, lexicon.doc_count + EXCLUDED.doc_count)"
            ),
            [
                {"tenant_id": t, "user_id": u, "field": f, "term": term, "delta": sign * n}
                for (t, u, f, term), n in sorted(counts.items())
            ],
        )
    if totals:
        session.execute(
            text(
                "INSERT INTO lexicon_totals (tenant_id, user_id, field, doc_count, term_total) "
                "VALUES (:tenant_id, :user_id, :field, :docs, :length) "
                "ON CONFLICT (tenant_id, user_id, field) DO UPDATE SET "
                "doc_count = GREATEST(0, lexicon_totals.doc_count + EXCLUDED.doc_count), "
                "term_total = GREATEST(0, lexicon_totals.term_total + EXCLUDED.term_total)"
            ),
            [
                {
                    "tenant_id": t,
                    "user_id": u,
                    "field": f,
                    "docs": sign * n,
                    "length": sign * lengths[(t, u, f)],
                }
                for (t, u, f), n in sorted(totals.items())
            ],
        )


def index_note_terms(*, session: Session, notes: Iterable[Note]) -> None:
    """Count newly active notes in the user's BM25 statistics."""
    _adjust(session, notes, +1)


def unindex_note_terms(*, session: Session, notes: Iterable[Note]) -> None:
    """Remove closed, archived or deleted notes from the user's BM25 statistics."""
    _adjust(session, notes, -1)
