"""Stage 6b with an LLM: the model rewrites the context line and tags of the notes a new
note was linked to, in light of it.

Invariants:
- Only current versions are shown to the model or changed: the llm queue may run after a
  later decision closed a note or its neighbour, and a closed version keeps what it said.
- The model is shown the new note with one audience of neighbours at a time
  (memory.access.audience.audience_key), and only neighbours the new note may flow
  into: every note in a prompt may flow into every neighbour the answer rewrites.
  Knowledge notes keep the context their consolidation gave them.
- What the answer writes is recorded as contributions of every note the prompt showed,
  so withdrawing any of them resets the context and removes the tags it brought.
- Rows are locked only after the model has answered, not during the call.
"""

from __future__ import annotations

import uuid
from collections import defaultdict

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from memory.access.audience import Audience, audience_key, may_flow
from memory.clients.llm import LlmClient
from memory.links.evolution import MAX_TAGS, record_contributions
from memory.notes.models import Note
from memory.trust.policy import may_lend

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
    """Let the model refresh the context and tags of each new note's neighbours (see the
    module invariants); return how many neighbours it changed."""
    changed = 0
    for note_id, neighbour_ids in linked.items():
        note = session.get(Note, note_id)
        if note is None or note.status != "active" or note.valid_to is not None:
            continue
        for group in _audience_groups(note, list(session.scalars(_current(neighbour_ids)))):
            changed += _evolve_group(session, llm, note, group)
    session.flush()
    return changed


def _audience_groups(note: Note, neighbours: list[Note]) -> list[list[Note]]:
    """The neighbours the note may flow into, by audience, in a stable order."""
    groups: dict[tuple[str, ...], list[Note]] = defaultdict(list)
    source = Audience.of(note)
    for neighbour in neighbours:
        target = Audience.of(neighbour)
        if neighbour.kind != "knowledge" and may_flow(source, target) and may_lend(note, neighbour):
            groups[audience_key(target)].append(neighbour)
    return [groups[key] for key in sorted(groups)]


def _evolve_group(session: Session, llm: LlmClient, note: Note, neighbours: list[Note]) -> int:
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
    shown = [note.id, *(n.id for n in neighbours)]
    still_current = _current(list(chosen)).with_for_update(skip_locked=True)
    changed = 0
    for target in session.scalars(still_current.execution_options(populate_existing=True)):
        item = chosen[target.id]
        before = set(target.tags or [])
        if item.get("context"):
            target.context = str(item["context"])[:300]
        if item.get("tags"):
            target.tags = list(dict.fromkeys(str(t).lower()[:40] for t in item["tags"]))[:MAX_TAGS]
        rows = [("tag", tag) for tag in target.tags or [] if tag not in before]
        rows += [("context", "")] if item.get("context") else []
        record_contributions(
            session,
            [
                (target.id, kind, value, source, target)
                for kind, value in rows
                for source in shown
                if source != target.id
            ],
        )
        changed += 1
    return changed


def _current(note_ids: list[uuid.UUID]) -> Select[tuple[Note]]:
    return (
        select(Note)
        .where(Note.id.in_(note_ids), Note.status == "active", Note.valid_to.is_(None))
        .order_by(Note.id)
    )
