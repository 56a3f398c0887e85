"""Write-time lexical indexing: analysed terms as a tsvector, and per-user BM25 statistics.

Invariants: a note's terms are counted in `lexicon`/`lexicon_totals` exactly while it is
active and current (valid_to IS NULL), and a term row exists only while some note is
counted with it; `index_note_terms` and `unindex_note_terms` are the
only writers, called on activation and on closing/archiving. What is counted is what the
note stores (its tsvectors and term counts), never a fresh analysis of its text, so a
change of the analyser cannot unbalance the statistics: `reanalyse_note_terms` moves a
stored note to the current analysis, its counts with it. Their changes are summed per
transaction and written in one sorted upsert just before the commit, so concurrent
workers lock statistics rows in one order, briefly, and never deadlock.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, String, cast, event, func, literal, text
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.orm import InstrumentedAttribute, Session

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


def user_terms_match(
    column: InstrumentedAttribute[Any],
    *,
    tenant_id: str | ColumnElement[str],
    user_id: str | ColumnElement[str],
    terms: list[str] | ColumnElement[str],
    every: bool = False,
) -> ColumnElement[bool]:
    """Rows of (tenant_id, user_id) whose tsvector `column` (of notes or note_terms) holds
    one of `terms` (with `every`, all of them). Each may instead be an SQL expression (a
    bound parameter; for terms, one holding their `tsvector_literal`).

    Written as the expression of the per-user term indexes (migration 0005), so the GIN
    lookup returns only that user's notes; the caller's user condition still applies (a
    key prefix shared by two users would only add candidates it removes).
    """
    wanted_terms = tsvector_literal(terms) if isinstance(terms, list) else terms
    wanted = func.note_user_lexemes(
        _as_text(tenant_id), _as_text(user_id), cast(_as_text(wanted_terms), TSVECTOR)
    )
    # The column's own table: notes, or the lexical routes' mirror note_terms (0009).
    table = column.class_
    keys = func.note_user_lexemes(table.tenant_id, table.user_id, column)
    return keys.bool_op("@>" if every else "&&")(wanted)


def _as_text(value: str | ColumnElement[str]) -> ColumnElement[str]:
    return literal(value, String) if isinstance(value, str) else value


def note_terms(note: Note) -> dict[str, list[str]]:
    return {
        "own": analyse(note.index_text or note.content),
        "window": analyse(note.window_text or ""),
    }


def apply_terms(note: Note, terms: dict[str, list[str]]) -> None:
    """Set the note's tsvector columns and lengths from analysed terms."""
    for column, value in _term_columns(terms).items():
        setattr(note, column, value)


def _term_columns(terms: dict[str, list[str]]) -> dict[str, Any]:
    """The tsvector columns (raw SQL literals) and lengths of analysed terms."""
    return {
        "index_terms": tsvector_literal(terms["own"]),
        "window_terms": tsvector_literal(terms["window"]),
        "term_count": len(terms["own"]),
        "window_term_count": len(terms["window"]),
    }


_PENDING = "lexicon_pending"


@dataclass
class _Pending:
    counts: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    totals: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    lengths: Counter[tuple[str, str, str]] = field(default_factory=Counter)


_LEXEME_RE = re.compile(r"'((?:[^'\\]|''|\\.)*)'")
_UNESCAPE_RE = re.compile(r"''|\\(.)")


def stored_lexemes(tsvector: str | None) -> set[str]:
    """The lexemes of a stored tsvector (PostgreSQL's output or `tsvector_literal`)."""
    if not tsvector:
        return set()
    return {
        _UNESCAPE_RE.sub(lambda m: m.group(1) or "'", m.group(1))
        for m in _LEXEME_RE.finditer(tsvector)
    }


@dataclass(frozen=True)
class _Counted:
    """One field's terms as counted: the distinct terms and the field's length."""

    terms: set[str]
    length: int


def _stored(note: Note) -> dict[str, _Counted]:
    return {
        "own": _Counted(stored_lexemes(note.index_terms), note.term_count or 0),
        "window": _Counted(stored_lexemes(note.window_terms), note.window_term_count or 0),
    }


def _analysed(terms: dict[str, list[str]]) -> dict[str, _Counted]:
    return {name: _Counted(set(terms[name]), len(terms[name])) for name in FIELDS}


def _adjust(session: Session, notes: Iterable[Note], sign: int) -> None:
    """Queue the notes' stored term counts; they are written once, just before the commit."""
    for note in notes:
        _count(session, note, _stored(note), sign)


def _count(session: Session, note: Note, fields: dict[str, _Counted], sign: int) -> None:
    pending: _Pending = session.info.setdefault(_PENDING, _Pending())
    for name in FIELDS:
        key = (note.tenant_id, note.user_id, name)
        pending.totals[key] += sign
        pending.lengths[key] += sign * fields[name].length
        for term in fields[name].terms:
            pending.counts[(*key, term)] += sign


@event.listens_for(Session, "before_commit")
def _write_pending(session: Session) -> None:
    """One sorted upsert per transaction: concurrent writers lock lexicon rows in the same
    order and only at the very end, so they cannot deadlock on each other."""
    pending: _Pending | None = session.info.pop(_PENDING, None)
    if pending is None:
        return
    keys = sorted(k for k, n in pending.counts.items() if n)
    if keys:
        session.execute(
            text(
                "INSERT INTO lexicon (tenant_id, user_id, field, term, doc_count) "
                "SELECT * FROM unnest(CAST(:tenants AS text[]), CAST(:users AS text[]), "
                "CAST(:fields AS text[]), CAST(:terms AS text[]), CAST(:deltas AS int[])) "
                "ON CONFLICT (tenant_id, user_id, field, term) "
                "DO UPDATE SET doc_count = GREATEST(0, lexicon.doc_count + EXCLUDED.doc_count)"
            ),
            {
                "tenants": [k[0] for k in keys],
                "users": [k[1] for k in keys],
                "fields": [k[2] for k in keys],
                "terms": [k[3] for k in keys],
                "deltas": [pending.counts[k] for k in keys],
            },
        )
    _drop_unused_terms(session, [k for k in keys if pending.counts[k] < 0])
    # A window change moves lengths without changing the document count.
    for key in sorted(set(pending.totals) | set(pending.lengths)):
        tenant_id, user_id, name = key
        session.execute(
            text(
                "INSERT INTO lexicon_totals (tenant_id, user_id, field, doc_count, term_total) "
                "VALUES (:tenant_id, :user_id, :field, :docs, :length) "
                "ON CONFLICT (tenant_id, user_id, field) DO UPDATE SET "
                "doc_count = GREATEST(0, lexicon_totals.doc_count + EXCLUDED.doc_count), "
                "term_total = GREATEST(0, lexicon_totals.term_total + EXCLUDED.term_total)"
            ),
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "field": name,
                "docs": pending.totals[key],
                "length": pending.lengths[key],
            },
        )


def _drop_unused_terms(session: Session, keys: list[tuple[str, str, str, str]]) -> None:
    """A term no counted note holds any more leaves the lexicon: the table would
    otherwise keep the words of forgotten and pruned memories."""
    if not keys:
        return
    session.execute(
        text(
            "DELETE FROM lexicon l USING unnest(CAST(:tenants AS text[]), "
            "CAST(:users AS text[]), CAST(:fields AS text[]), CAST(:terms AS text[])) "
            "AS k(tenant_id, user_id, field, term) WHERE l.tenant_id = k.tenant_id "
            "AND l.user_id = k.user_id AND l.field = k.field AND l.term = k.term "
            "AND l.doc_count <= 0"
        ),
        {
            "tenants": [k[0] for k in keys],
            "users": [k[1] for k in keys],
            "fields": [k[2] for k in keys],
            "terms": [k[3] for k in keys],
        },
    )


@event.listens_for(Session, "after_rollback")
def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING, None)


def index_note_terms(*, session: Session, notes: Iterable[Note]) -> None:
    """Count newly active notes in the user's BM25 statistics (written at commit)."""
    _adjust(session, notes, +1)


def activate_note_terms(*, session: Session, note: Note) -> dict[str, Any]:
    """The term columns of a note becoming active, counted in the user's BM25 statistics
    from the same analysis; the caller writes them with the activation. Not written when
    the note is embedded: that update then changes no indexed column and can stay HOT,
    and the activation's update, which changes the indexed status anyway, writes the
    term indexes once."""
    terms = note_terms(note)
    _count(session, note, _analysed(terms), +1)
    return _term_columns(terms)


def reanalyse_note_terms(*, session: Session, note: Note, counted: bool) -> bool:
    """Store the current analysis of the note's own and window text; when it is `counted`
    (active and current), its statistics move from the stored terms to the new ones.
    Whether anything changed."""
    terms = note_terms(note)
    stored, fresh = _stored(note), _analysed(terms)
    if stored == fresh:  # the same terms and lengths: nothing to write
        return False
    if counted:
        _count(session, note, stored, -1)
        _count(session, note, fresh, +1)
    apply_terms(note, terms)
    return True


def window_term_columns(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    old_terms: str | None,
    old_count: int | None,
    new_text: str,
    counted: bool,
) -> dict[str, Any]:
    """The window columns of a note whose stored window terms (`old_terms`, `old_count`
    of them) give way to those of `new_text`; when the note is `counted` in the user's
    statistics (active and current), its window terms move there too (written at
    commit). The note's own terms and its place in the document count are unchanged."""
    new = analyse(new_text)
    if counted:
        pending: _Pending = session.info.setdefault(_PENDING, _Pending())
        key = (tenant_id, user_id, "window")
        pending.lengths[key] += len(new) - (old_count or 0)
        for term in stored_lexemes(old_terms):
            pending.counts[(*key, term)] -= 1
        for term in set(new):
            pending.counts[(*key, term)] += 1
    return {
        "window_text": new_text,
        "window_terms": tsvector_literal(new),
        "window_term_count": len(new),
    }


def unindex_note_terms(*, session: Session, notes: Iterable[Note]) -> None:
    """Remove closed, archived or deleted notes from the user's BM25 statistics (at commit)."""
    _adjust(session, notes, -1)
