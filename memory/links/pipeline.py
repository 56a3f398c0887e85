"""Stage 6 of the write path: link a new note to similar ones, then evolve the neighbours.

Invariants: links are bidirectional `related` edges with the cosine as weight, at most
`max_links` per new note, inserted with ON CONFLICT DO NOTHING so re-runs add nothing.
Evolution without an LLM merges keywords and tags into the linked notes (bounded); with
an LLM the model refreshes their context line and tags.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.links.models import Link
from memory.notes.models import Note
from memory.notes.pipeline import similar_notes

MAX_KEYWORDS = 12
MAX_TAGS = 10


def link_notes(
    *, session: Session, note_ids: Sequence[uuid.UUID], settings: Settings
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Link each active note to its similar notes; return {note: linked neighbours}."""
    linked: dict[uuid.UUID, list[uuid.UUID]] = {}
    notes = session.scalars(
        select(Note).where(
            Note.id.in_(note_ids), Note.status == "active", Note.embedding.is_not(None)
        )
    )
    for note in notes:
        candidates = similar_notes(
            session,
            note,
            limit=settings.pipeline.max_links,
            min_similarity=settings.pipeline.link_threshold,
        )
        rows = []
        for c in candidates:
            for source, target in ((note.id, c.note_id), (c.note_id, note.id)):
                rows.append(
                    {
                        "id": uuid.uuid4(),
                        "tenant_id": note.tenant_id,
                        "user_id": note.user_id,
                        "source_id": source,
                        "target_id": target,
                        "kind": "related",
                        "weight": round(c.similarity, 4),
                        "created_by": "pipeline",
                    }
                )
        if rows:
            rows.sort(key=lambda row: (row["source_id"], row["target_id"]))  # one lock order
            session.execute(insert(Link).values(rows).on_conflict_do_nothing())
        linked[note.id] = [c.note_id for c in candidates]
    session.flush()
    return linked


def evolve_by_keywords(*, session: Session, linked: dict[uuid.UUID, list[uuid.UUID]]) -> int:
    """Merge each new note's keywords and tags into its neighbours (bounded). Returns count."""
    changed = 0
    for note_id, neighbour_ids in linked.items():
        note = session.get(Note, note_id)
        if note is None or not neighbour_ids:
            continue
        # Evolution is best effort: skip neighbours another worker is updating, and lock
        # the rest in id order so concurrent link tasks cannot deadlock.
        neighbours = session.scalars(
            select(Note)
            .where(Note.id.in_(neighbour_ids))
            .order_by(Note.id)
            .with_for_update(skip_locked=True)
        )
        for neighbour in neighbours:
            keywords = _merge(neighbour.keywords, note.keywords, MAX_KEYWORDS)
            tags = _merge(neighbour.tags, note.tags, MAX_TAGS)
            if keywords != list(neighbour.keywords or []) or tags != list(neighbour.tags or []):
                neighbour.keywords, neighbour.tags = keywords, tags
                changed += 1
    session.flush()
    return changed


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
    changed = 0
    for note_id, neighbour_ids in linked.items():
        note = session.get(Note, note_id)
        neighbours = list(session.scalars(select(Note).where(Note.id.in_(neighbour_ids))))
        if note is None or not neighbours:
            continue
        listing = "\n".join(
            f"{i}. {n.content} | context: {n.context or ''} | tags: {', '.join(n.tags or [])}"
            for i, n in enumerate(neighbours)
        )
        answer = llm.complete_json(
            EVOLVE_SYSTEM, f"NEW: {note.content}\nOLDER:\n{listing}", EVOLVE_SCHEMA, name="evolve"
        )
        for item in answer["notes"]:
            index = item.get("index")
            if isinstance(index, int) and 0 <= index < len(neighbours):
                target = neighbours[index]
                if item.get("context"):
                    target.context = str(item["context"])[:300]
                if item.get("tags"):
                    target.tags = _merge([], [str(t).lower()[:40] for t in item["tags"]], MAX_TAGS)
                changed += 1
    session.flush()
    return changed
