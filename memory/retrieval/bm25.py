"""Okapi BM25 over a note's own terms and over its window's (the note with its neighbour
turns), computed in SQL from the user's lexicon statistics.

Invariants: the candidates are the user's notes holding one of the query's rarest terms
while their document frequencies add up to at most MATCH_MAX_NOTES, looked up under the
user's own keys of the term index (migration 0005). Where even the rarest term is more
common than that (`QueryTerms.bounded` false), the own-text route scores the notes that
hold both of the two rarest terms (one term: MATCH_MAX_NOTES of its notes) and the window
route is given the candidates of the other routes as `among` (`candidates.run_routes`),
so no route scores more than about MATCH_MAX_NOTES notes. Scores use every query term the
user's notes contain. Both routes read `note_terms`, the narrow mirror of what they need
(terms, lengths, the access rules' and filters' columns; migration 0009), never the wide
notes rows: on the latency benchmark's data those made a question's first BM25 2-3 times
slower than its second.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    String,
    any_,
    bindparam,
    func,
    literal_column,
    null,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, TEXT
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.db import CompiledStatement
from memory.notes.lexicon import tsvector_literal, user_terms_match
from memory.notes.models import LexiconTerm, LexiconTotal, NoteTerms
from memory.retrieval.scope import (
    ReadScope,
    ScopeShape,
    scope_conditions,
    shape_cached,
    window_usable,
)
from memory.types import id_in_param

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


@dataclass
class QueryTerms:
    """Query terms with their idf per field, from the user's lexicon statistics;
    `bounded[field]`: the selecting terms match at most MATCH_MAX_NOTES notes."""

    terms: list[str]
    idf: dict[str, dict[str, float]] = field(default_factory=dict)
    avg_len: dict[str, float] = field(default_factory=dict)
    match: dict[str, list[str]] = field(default_factory=dict)
    bounded: dict[str, bool] = field(default_factory=dict)
    # The terms the user's notes hold, rarest first.
    rarest: dict[str, list[str]] = field(default_factory=dict)


def load_query_terms(session: Session, viewer: Viewer, terms: list[str]) -> QueryTerms:
    """idf per field from the user's document frequencies, and which terms may select."""
    result = QueryTerms(terms=list(dict.fromkeys(terms)))
    if not result.terms:
        return result
    df: dict[tuple[str, str], int] = {}
    totals: dict[str, Any] = {}
    params = {"tenant_id": viewer.tenant_id, "user_id": viewer.user_id, "terms": result.terms}
    for row in _statistics_statement().rows(session, params):
        if row.term is None:
            totals[row.field] = row
        else:
            df[(row.field, row.term)] = row.doc_count
    for name in ("own", "window"):
        total = totals.get(name)
        n_docs = max(total.doc_count, 0) if total else 0
        result.avg_len[name] = (total.term_total / n_docs) if total and n_docs else 1.0
        counts = {t: min(max(df.get((name, t), 0), 0), n_docs) for t in result.terms}
        result.idf[name] = {
            t: math.log(1.0 + (n_docs - c + 0.5) / (c + 0.5)) for t, c in counts.items() if c > 0
        }
        result.match[name] = _selecting_terms(counts, n_docs)
        result.rarest[name] = [t for _, t in _present(counts)]
        result.bounded[name] = sum(counts[t] for t in result.match[name]) <= MATCH_MAX_NOTES
    return result


@cache
def _statistics_statement() -> CompiledStatement:
    """The user's document frequencies of the terms and the per-field totals, in one
    round trip (a total's row has no term)."""
    tenant_id = bindparam("tenant_id", type_=String)
    user_id = bindparam("user_id", type_=String)
    frequencies = select(
        LexiconTerm.field, LexiconTerm.term, LexiconTerm.doc_count, null().label("term_total")
    ).where(
        LexiconTerm.tenant_id == tenant_id,
        LexiconTerm.user_id == user_id,
        LexiconTerm.term == any_(bindparam("terms", type_=ARRAY(TEXT))),
    )
    field_totals = select(
        LexiconTotal.field, null(), LexiconTotal.doc_count, LexiconTotal.term_total
    ).where(LexiconTotal.tenant_id == tenant_id, LexiconTotal.user_id == user_id)
    return CompiledStatement(union_all(frequencies, field_totals))


def _present(counts: dict[str, int]) -> list[tuple[int, str]]:
    """(document frequency, term) of the terms the user's notes hold, rarest first."""
    return sorted((c, t) for t, c in counts.items() if c > 0)


def _selecting_terms(counts: dict[str, int], n_docs: int) -> list[str]:
    """The query terms whose notes become BM25 candidates: the rarest first, while their
    document frequencies add up to at most MATCH_MAX_NOTES (never fewer than one term)."""
    present = _present(counts)
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


def _candidate_mode(query: QueryTerms, name: str, among: Sequence[uuid.UUID] | None) -> str:
    """Which notes a BM25 route scores: the given ones ("among": primary key; a note
    without any query term drops out), else the user's notes holding a selecting term
    ("match", the per-user term index). When even the rarest term is in more than
    MATCH_MAX_NOTES notes, the notes holding both of the two rarest terms ("every":
    those BM25 ranks first); with a single term, MATCH_MAX_NOTES of its notes ("some").
    Scoring costs ~6 us per note: a term in 3,600 of a user's notes made the route take
    24 ms."""
    if among is not None:
        return "among"
    if query.bounded.get(name, True):
        return "match"
    return "every" if len(query.rarest[name]) >= 2 else "some"


def _candidates(vector_col: Any, mode: str) -> ColumnElement[bool]:
    if mode == "among":
        return id_in_param(NoteTerms.note_id, "among")
    match = partial(
        user_terms_match,
        vector_col,
        tenant_id=bindparam("viewer_tenant_id", type_=String),
        user_id=bindparam("viewer_user_id", type_=String),
        terms=bindparam("match_terms", type_=String),
    )
    if mode != "some":
        return match(every=mode == "every")
    some = select(NoteTerms.note_id).where(match()).limit(bindparam("match_limit", type_=Integer))
    return NoteTerms.note_id.in_(some.scalar_subquery())


def _match_terms(query: QueryTerms, name: str, mode: str) -> list[str]:
    if mode == "match":
        return query.match[name]
    return query.rarest[name][: 2 if mode == "every" else 1]


def bm25_route(
    session: Session,
    scope: ReadScope,
    query: QueryTerms,
    *,
    limit: int,
    window: bool,
    among: Sequence[uuid.UUID] | None = None,
) -> dict[uuid.UUID, float]:
    """Okapi BM25 computed in SQL over the notes that contain a selective query term, or,
    given `among` (notes other routes found, which applied the access rules), over those.
    """
    name = "window" if window else "own"
    idf = query.idf.get(name, {})
    if not idf or not query.match.get(name) or (among is not None and not among):
        return {}
    mode = _candidate_mode(query, name, among)
    terms = list(idf)
    params = {
        **scope.params,
        "terms": terms,
        "idfs": [idf[t] for t in terms],
        "avg_len": query.avg_len[name],
        "match_terms": tsvector_literal(_match_terms(query, name, mode)),
        "among": list(among or []),
        "match_limit": MATCH_MAX_NOTES,
    }
    rows = _bm25_statement(scope.shape, window, mode, limit).rows(session, params)
    return {row.id: float(row.score) for row in rows}


@shape_cached
def _bm25_statement(shape: ScopeShape, window: bool, mode: str, limit: int) -> CompiledStatement:
    vector_col = NoteTerms.window_terms if window else NoteTerms.index_terms
    length_col = NoteTerms.window_term_count if window else NoteTerms.term_count
    terms = bindparam("terms", type_=ARRAY(TEXT))
    # Only the query's lexemes are unnested: marked with weight A, then kept by weight
    # (a window holds ~28 lexemes, a query matches one or two of them).
    query_only = func.ts_filter(
        func.setweight(vector_col, literal_column("'A'"), terms), literal_column("'{a}'")
    )
    lexemes = func.unnest(query_only).table_valued("lexeme", "positions", "weights").alias("u")
    weights = (
        func.unnest(terms, bindparam("idfs", type_=ARRAY(Float)))
        .table_valued("term", "idf")
        .render_derived(name="q")
    )
    tf = func.coalesce(func.array_length(lexemes.c.positions, 1), 1)
    avg_len = bindparam("avg_len", type_=Float)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length_col / avg_len)
    # Scored per note in a LATERAL subquery (a dozen lexemes against a few terms), not by
    # joining every candidate's lexemes to the terms and grouping: the plan then does
    # not depend on the planner's estimate of the candidates (one misestimate turned the
    # join into a nested loop over 35k lexeme rows per term: 11.1 ms in EXPLAIN against
    # 6.5 ms per note for the same 864 candidates).
    per_note = (
        select(func.sum(weights.c.idf * tf * (BM25_K1 + 1) / (tf + norm)).label("score"))
        .select_from(lexemes)
        .join(weights, weights.c.term == lexemes.c.lexeme)
        .lateral("s")
    )
    conditions = [
        # Equality on both partition columns prunes the read to the viewer's partition.
        NoteTerms.tenant_id == bindparam("viewer_tenant_id", type_=String),
        NoteTerms.user_id == bindparam("viewer_user_id", type_=String),
        scope_conditions(shape, NoteTerms, scope_by_index=False),  # type: ignore[arg-type]
        _candidates(vector_col, mode),
        per_note.c.score.is_not(None),
    ]
    if window and not shape.viewer.user_level:
        conditions.append(window_usable(NoteTerms.window_readers))
    return CompiledStatement(
        select(NoteTerms.note_id.label("id"), per_note.c.score)
        .select_from(NoteTerms)
        .join(per_note, true())
        .where(*conditions)
        .order_by(per_note.c.score.desc())
        .limit(limit)
    )
