"""Candidate routes of the read path. Every route filters by the access rules inside SQL.

Invariants: each route returns {note_id: score} on its own scale (higher is better) for
at most `limit` notes the viewer may see, that are current (valid_to IS NULL), not
expired, and active (or archived when asked for); no route reads a whole history into
Python: candidates come from indexes (HNSW, GIN on tsvector, trigram).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Float,
    and_,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, TEXT, TSQUERY
from sqlalchemy.orm import Session, aliased

from memory.access.policy import Viewer, visible_clause
from memory.links.models import Link
from memory.notes.models import LexiconTerm, LexiconTotal, Note
from memory.types import utcnow

BM25_K1 = 1.2
BM25_B = 0.75
# Terms in more than this share of a user's notes are scored but do not select candidates:
# at 100k notes a stopword-like term would otherwise pull in tens of thousands of rows.
MATCH_MAX_DF_SHARE = 0.08
MATCH_MIN_TERMS = 2
# The selecting terms together match at most about this many notes (rarest terms first):
# BM25 is computed per matched note, so this bounds the route's cost whatever the user's
# size. A term beyond it still scores the notes the rarer terms selected.
MATCH_MAX_NOTES = 2000


@dataclass(frozen=True)
class SearchFilters:
    kinds: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    include_archived: bool = False


@dataclass
class QueryTerms:
    """Query terms with their idf per field, from the user's lexicon statistics."""

    terms: list[str]
    idf: dict[str, dict[str, float]] = field(default_factory=dict)
    avg_len: dict[str, float] = field(default_factory=dict)
    match: dict[str, list[str]] = field(default_factory=dict)


def base_conditions(
    viewer: Viewer, filters: SearchFilters, note: type[Note] = Note
) -> ColumnElement[bool]:
    statuses = ("active", "archived") if filters.include_archived else ("active",)
    parts: list[ColumnElement[bool]] = [
        visible_clause(viewer, note),
        note.status.in_(statuses),
        note.valid_to.is_(None),
        or_(note.expires_at.is_(None), note.expires_at > utcnow()),
    ]
    if filters.kinds:
        parts.append(note.kind.in_(filters.kinds))
    if filters.domains:
        parts.append(note.domain.in_(filters.domains))
    if filters.since is not None:
        parts.append(note.occurred_at >= filters.since)
    if filters.until is not None:
        parts.append(note.occurred_at <= filters.until)
    return and_(*parts)


def dense_route(
    session: Session, where: ColumnElement[bool], vector: np.ndarray, *, limit: int
) -> dict[uuid.UUID, float]:
    distance = Note.embedding.cosine_distance(vector)
    rows = session.execute(
        select(Note.id, distance.label("d"))
        .where(where, Note.embedding.is_not(None))
        .order_by(distance)
        .limit(limit)
    )
    return {row.id: 1.0 - float(row.d) for row in rows}


def window_similarity(
    session: Session, note_ids: list[uuid.UUID], vector: np.ndarray
) -> dict[uuid.UUID, float]:
    """Cosine of the query with the window vectors of `note_ids`, which must come from
    routes that applied the access rules (this reads those rows only, by primary key)."""
    if not note_ids:
        return {}
    similarity = 1.0 - Note.window_embedding.cosine_distance(vector)
    rows = session.execute(
        select(Note.id, similarity.label("s")).where(
            Note.id.in_(note_ids), Note.window_embedding.is_not(None)
        )
    )
    return {row.id: float(row.s) for row in rows}


def load_query_terms(session: Session, viewer: Viewer, terms: list[str]) -> QueryTerms:
    """idf per field from the user's document frequencies, and which terms may select."""
    result = QueryTerms(terms=list(dict.fromkeys(terms)))
    if not result.terms:
        return result
    scope = (LexiconTerm.tenant_id == viewer.tenant_id, LexiconTerm.user_id == viewer.user_id)
    df: dict[tuple[str, str], int] = {
        (row.field, row.term): row.doc_count
        for row in session.execute(
            select(LexiconTerm.field, LexiconTerm.term, LexiconTerm.doc_count).where(
                *scope, LexiconTerm.term.in_(result.terms)
            )
        )
    }
    totals = {
        row.field: row
        for row in session.execute(
            select(LexiconTotal).where(
                LexiconTotal.tenant_id == viewer.tenant_id, LexiconTotal.user_id == viewer.user_id
            )
        ).scalars()
    }
    for name in ("own", "window"):
        total = totals.get(name)
        n_docs = max(total.doc_count, 0) if total else 0
        result.avg_len[name] = (total.term_total / n_docs) if total and n_docs else 1.0
        counts = {t: min(max(df.get((name, t), 0), 0), n_docs) for t in result.terms}
        result.idf[name] = {
            t: math.log(1.0 + (n_docs - c + 0.5) / (c + 0.5)) for t, c in counts.items() if c > 0
        }
        result.match[name] = _selecting_terms(counts, n_docs)
    return result


def _selecting_terms(counts: dict[str, int], n_docs: int) -> list[str]:
    """The query terms whose notes become BM25 candidates: the rarest first, while their
    document frequencies add up to at most MATCH_MAX_NOTES (never fewer than one term)."""
    present = sorted((c, t) for t, c in counts.items() if c > 0)
    cap = max(50, MATCH_MAX_DF_SHARE * n_docs)
    selective = [(c, t) for c, t in present if c <= cap] or present[:MATCH_MIN_TERMS]
    chosen: list[str] = []
    total = 0
    for count, term in selective:
        if chosen and total + count > MATCH_MAX_NOTES:
            break
        chosen.append(term)
        total += count
    return chosen


def _tsquery(terms: list[str]) -> str:
    """A tsquery literal OR-ing the exact lexemes (cast, not to_tsquery: no re-parsing,
    so 'inc-4471' stays one lexeme)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def bm25_route(
    session: Session, where: ColumnElement[bool], query: QueryTerms, *, limit: int, window: bool
) -> dict[uuid.UUID, float]:
    """Okapi BM25 computed in SQL over the notes that contain a selective query term."""
    name = "window" if window else "own"
    idf = query.idf.get(name, {})
    match = query.match.get(name, [])
    if not idf or not match:
        return {}
    vector_col = Note.window_terms if window else Note.index_terms
    length_col = Note.window_term_count if window else Note.term_count
    lexemes = func.unnest(vector_col).table_valued("lexeme", "positions", "weights").lateral("u")
    terms = list(idf)
    weights = (
        func.unnest(cast(terms, ARRAY(TEXT)), cast([idf[t] for t in terms], ARRAY(Float)))
        .table_valued("term", "idf")
        .render_derived(name="q")
    )
    tf = func.coalesce(func.array_length(lexemes.c.positions, 1), 1)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length_col / query.avg_len[name])
    score = func.sum(weights.c.idf * tf * (BM25_K1 + 1) / (tf + norm)).label("score")
    statement = (
        select(Note.id, score)
        .select_from(Note)
        .join(lexemes, true())
        .join(weights, weights.c.term == lexemes.c.lexeme)
        .where(where, vector_col.op("@@")(cast(literal(_tsquery(match)), TSQUERY)))
        .group_by(Note.id)
        .order_by(score.desc())
        .limit(limit)
    )
    return {row.id: float(row.score) for row in session.execute(statement)}


def verbatim_route(
    session: Session, where: ColumnElement[bool], tokens: list[str], *, limit: int
) -> dict[uuid.UUID, float]:
    """Notes containing an id-like token verbatim (trigram index); score = tokens matched."""
    usable = [t for t in dict.fromkeys(tokens) if len(t) >= 3][:5]
    if not usable:
        return {}
    likes = [Note.content.ilike("%" + _escape_like(t) + "%", escape="\\") for t in usable]
    hits = [case((like, 1.0), else_=0.0) for like in likes]
    matched = sum(hits[1:], hits[0]).label("matched")
    rows = session.execute(
        select(Note.id, matched).where(where, or_(*likes)).order_by(matched.desc()).limit(limit)
    )
    return {row.id: float(row.matched) for row in rows}


def _escape_like(token: str) -> str:
    return token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def linked_route(
    session: Session, where: ColumnElement[bool], seeds: dict[uuid.UUID, float], *, limit: int
) -> dict[uuid.UUID, tuple[float, uuid.UUID]]:
    """One hop from strong candidates: {target: (seed relevance * link weight, seed)}."""
    if not seeds:
        return {}
    rows = session.execute(
        select(Link.source_id, Link.target_id, Link.weight)
        .join(Note, Note.id == Link.target_id)
        .where(
            Link.source_id.in_(list(seeds)),
            Link.kind.in_(("related", "consolidates", "derived_from")),
            where,
        )
        .limit(limit * 4)
    )
    spread: dict[uuid.UUID, tuple[float, uuid.UUID]] = {}
    for source_id, target_id, weight in rows:
        value = seeds[source_id] * float(weight)
        if value > spread.get(target_id, (0.0, source_id))[0]:
            spread[target_id] = (value, source_id)
    return dict(sorted(spread.items(), key=lambda kv: -kv[1][0])[:limit])


def adjacent_turns(
    session: Session, viewer: Viewer, filters: SearchFilters, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """For each note, the visible notes of the previous and next turn of its session."""
    if not note_ids:
        return {}
    seeds = (
        select(Note.id, Note.session_id, Note.turn_seq)
        .where(Note.id.in_(note_ids), Note.turn_seq.is_not(None))
        .cte("seeds")
    )
    neighbour = aliased(Note)
    visible = base_conditions(viewer, filters, neighbour)
    same_session = and_(visible, neighbour.session_id == seeds.c.session_id)
    before = (
        select(neighbour.id.label("nid"))
        .where(same_session, neighbour.turn_seq < seeds.c.turn_seq)
        .order_by(neighbour.turn_seq.desc())
        .limit(1)
        .lateral("before")
    )
    after = (
        select(neighbour.id.label("nid"))
        .where(same_session, neighbour.turn_seq > seeds.c.turn_seq)
        .order_by(neighbour.turn_seq)
        .limit(1)
        .lateral("after")
    )
    statement = union_all(
        select(seeds.c.id, before.c.nid).select_from(seeds.join(before, true())),
        select(seeds.c.id, after.c.nid).select_from(seeds.join(after, true())),
    )
    adjacent: dict[uuid.UUID, list[uuid.UUID]] = {}
    for seed_id, neighbour_id in session.execute(statement):
        adjacent.setdefault(seed_id, []).append(neighbour_id)
    return adjacent
