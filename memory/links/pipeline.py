"""Stage 6 of the write path: link a new note to similar ones, then evolve the neighbours.

Invariants: links are bidirectional `related` edges with the cosine as weight, at most
`max_links` per new note, inserted with ON CONFLICT DO NOTHING so re-runs add nothing.
Evolution without an LLM merges keywords and tags into the linked notes (bounded) and
writes only the notes it changed; with an LLM the model refreshes their context line and
tags. Both stages make a constant number of statements per batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cache

from sqlalchemy import Select, select, text
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.similar import note_scopes, similar_notes
from memory.notes.writes import note_update
from memory.types import id_in_param, utcnow

MAX_KEYWORDS = 12
MAX_TAGS = 10

Terms = tuple[list[str], list[str]]  # a note's (keywords, tags)


def link_notes(
    *, session: Session, note_ids: Sequence[uuid.UUID], settings: Settings
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Link each active note to its similar notes; return {note: linked neighbours, best
    first} for every active, embedded note of `note_ids` (in that order; maybe empty)."""
    scopes = note_scopes(session, note_ids)
    found = similar_notes(
        session,
        note_ids,
        limit=settings.pipeline.max_links,
        min_similarity=settings.pipeline.link_threshold,
        status="active",
        scopes=scopes,
    )
    edges: dict[tuple[uuid.UUID, uuid.UUID], tuple[str, str, float]] = {}
    for note_id, candidates in found.items():
        for c in candidates:
            for edge in ((note_id, c.note_id), (c.note_id, note_id)):
                edges.setdefault(edge, (*scopes[note_id], round(c.similarity, 4)))
    _insert_related(session, edges)
    # In the order of `note_ids`, so evolution merges in a repeatable order.
    return {i: [c.note_id for c in found[i]] for i in dict.fromkeys(note_ids) if i in found}


@cache
def _insert_related_statement() -> CompiledStatement:
    return CompiledStatement(
        text(
            "INSERT INTO links (id, tenant_id, user_id, source_id, target_id, kind, weight, "
            "created_by, created_at) "
            "SELECT id, tenant_id, user_id, source_id, target_id, 'related', weight, "
            "'pipeline', :now "
            "FROM unnest(CAST(:ids AS uuid[]), CAST(:tenants AS text[]), "
            "CAST(:users AS text[]), CAST(:sources AS uuid[]), CAST(:targets AS uuid[]), "
            "CAST(:weights AS float8[])) "
            "AS e(id, tenant_id, user_id, source_id, target_id, weight) "
            "ON CONFLICT DO NOTHING"
        )
    )


def _insert_related(
    session: Session, edges: dict[tuple[uuid.UUID, uuid.UUID], tuple[str, str, float]]
) -> None:
    """Insert {(source, target): (tenant, user, weight)} as `related` links, in one
    statement and one lock order (source, target); existing edges are left as they are."""
    if not edges:
        return
    keys = sorted(edges)  # (source, target)
    _insert_related_statement().run(
        session,
        {
            "ids": [uuid.uuid4() for _ in keys],
            "tenants": [edges[key][0] for key in keys],
            "users": [edges[key][1] for key in keys],
            "sources": [key[0] for key in keys],
            "targets": [key[1] for key in keys],
            "weights": [edges[key][2] for key in keys],
            "now": utcnow(),
        },
    )


def evolve_by_keywords(*, session: Session, linked: dict[uuid.UUID, list[uuid.UUID]]) -> int:
    """Merge each new note's keywords and tags into its neighbours (bounded), in the order
    of `linked`, each merge seeing the earlier ones. Returns how many merges changed a
    neighbour; only neighbours that end up changed are written (one executemany).
    """
    pairs = {note_id: ids for note_id, ids in linked.items() if ids}
    if not pairs:
        return 0
    # Evolution is best effort: skip neighbours another worker is updating, and lock the
    # rest in id order so concurrent link tasks cannot deadlock.
    neighbours = sorted({n for ids in pairs.values() for n in ids})
    locked = _terms(session, _terms_statement(lock=True), neighbours)
    terms = dict(locked)
    unread = [note_id for note_id in pairs if note_id not in terms]
    if unread:
        terms.update(_terms(session, _terms_statement(lock=False), unread))
    changed = 0
    for note_id, neighbour_ids in pairs.items():
        if note_id not in terms:  # deleted since it was linked
            continue
        keywords, tags = terms[note_id]
        for neighbour_id in sorted(set(neighbour_ids) & locked.keys()):
            current = terms[neighbour_id]
            merged = (
                _merge(current[0], keywords, MAX_KEYWORDS),
                _merge(current[1], tags, MAX_TAGS),
            )
            if merged != current:
                terms[neighbour_id] = merged
                changed += 1
    _store_terms(session, {k: terms[k] for k in locked if terms[k] != locked[k]})
    return changed


def _terms(
    session: Session, statement: CompiledStatement, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, Terms]:
    rows = statement.rows(session, {"terms_note_ids": note_ids})
    return {row.id: (list(row.keywords or []), list(row.tags or [])) for row in rows}


@cache
def _terms_statement(*, lock: bool) -> CompiledStatement:
    query = select(Note.id, Note.keywords, Note.tags).where(id_in_param(Note.id, "terms_note_ids"))
    if lock:
        query = query.order_by(Note.id).with_for_update(skip_locked=True)
    return CompiledStatement(query)


def _store_terms(session: Session, terms: dict[uuid.UUID, Terms]) -> None:
    """Write keywords and tags by note id (sorted: rows are already locked in this order);
    objects loaded in `session` are kept in step without a second write."""
    if not terms:
        return
    now = utcnow()
    ordered = sorted(terms.items())
    note_update(("keywords", "tags", "updated_at")).run_many(
        session,
        [
            {"note_id": k, "keywords": kw, "tags": tags, "updated_at": now}
            for k, (kw, tags) in ordered
        ],
    )
    for note_id, (keywords, tags) in ordered:
        loaded = session.identity_map.get(session.identity_key(Note, note_id))  # type: ignore[arg-type]
        if loaded is not None:
            set_committed_value(loaded, "keywords", keywords)
            set_committed_value(loaded, "tags", tags)
            set_committed_value(loaded, "updated_at", now)


def _merge(current: Sequence[str] | None, extra: Sequence[str] | None, limit: int) -> list[str]:
    merged = list(current or [])
    for item in extra or []:
        if len(merged) >= limit:
            break
        if item not in merged:
            merged.append(item)
    return merged


EVOLVE_SCHEMA = {
    "type": "object",
    "properties": {
        "notes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "context": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["index"],
            },
        }
    },
    "required": ["notes"],
}
EVOLVE_SYSTEM = (
    "A new memory note was linked to older notes. For each older note whose one-line "
    "context or tags should change in light of the new note, return its index with a new "
    "context (one line) and tags (lowercase words). JSON only."
)


def evolve_with_llm(
    *, session: Session, linked: dict[uuid.UUID, list[uuid.UUID]], llm: LlmClient
) -> int:
    """Let the model refresh the context and tags of each new note's neighbours.

    Only current versions are shown to the model or changed: the llm queue may run after
    a later decision closed a note or its neighbour, and a closed version keeps what it
    said. Rows are locked only after the model has answered, not during the call.
    """
    changed = 0
    for note_id, neighbour_ids in linked.items():
        note = session.get(Note, note_id)
        neighbours = list(session.scalars(_current_notes(neighbour_ids)))
        if note is None or note.status != "active" or note.valid_to is not None or not neighbours:
            continue
        listing = "\n".join(
            f"{i}. {n.content} | context: {n.context or ''} | tags: {', '.join(n.tags or [])}"
            for i, n in enumerate(neighbours)
        )
        answer = llm.complete_json(
            EVOLVE_SYSTEM, f"NEW: {note.content}\nOLDER:\n{listing}", EVOLVE_SCHEMA, name="evolve"
        )
        chosen = {
            neighbours[item["index"]].id: item
            for item in answer["notes"]
            if isinstance(item.get("index"), int) and 0 <= item["index"] < len(neighbours)
        }
        still_current = _current_notes(list(chosen)).with_for_update(skip_locked=True)
        for target in session.scalars(still_current.execution_options(populate_existing=True)):
            item = chosen[target.id]
            if item.get("context"):
                target.context = str(item["context"])[:300]
            if item.get("tags"):
                target.tags = _merge([], [str(t).lower()[:40] for t in item["tags"]], MAX_TAGS)
            changed += 1
    session.flush()
    return changed


def _current_notes(note_ids: list[uuid.UUID]) -> Select[tuple[Note]]:
    return (
        select(Note)
        .where(Note.id.in_(note_ids), Note.status == "active", Note.valid_to.is_(None))
        .order_by(Note.id)
    )
