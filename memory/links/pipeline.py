"""Stage 6 of the write path: link a new note to similar ones (evolving the neighbours is
memory.links.evolution).

Invariants: links are bidirectional `related` edges with the cosine as weight, at most
`max_links` per new note, inserted with ON CONFLICT DO NOTHING so re-runs add nothing;
a constant number of statements per batch. A link carries no content: who may see it is
decided where it is read (both ends visible).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cache

from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.config import Settings
from memory.db import CompiledStatement
from memory.notes.similar import note_scopes, similar_notes
from memory.types import utcnow

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
