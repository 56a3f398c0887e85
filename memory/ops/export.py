"""Export one user's memory as json, jsonl or markdown, streamed chunk by chunk.

Invariants:
- An export holds everything a faithful round trip needs: every version row of every
  note the viewer may see (embeddings, access history, pins, visibility, tsvectors), the
  provenance rows and the episodes they cite, and the links between exported notes. A
  user-level export adds every episode of the user, conflicts, tombstones, the audit
  events and the agents that authored the notes.
- An agent-level export never contains a row the agent could not read: notes pass
  `visible_clause`, provenance and links only follow exported notes, an episode only
  when every note made from it is exported, and a note's windows only when the agent
  may rank by them.
- Rows are keyed by column name and encoded by `rowcodec`; jsonl and markdown end with an
  `end` record carrying the row counts, so a truncated file is detected on import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Select, Table, and_, select
from sqlalchemy.orm import Session

from memory.access.models import Agent
from memory.access.policy import Viewer, visible_clause
from memory.conflicts.models import Conflict
from memory.episodes.models import Episode
from memory.errors import InvalidInputError
from memory.links.models import Link
from memory.notes.models import Note, NoteSource, Tombstone
from memory.ops.models import AuditEvent
from memory.ops.rowcodec import encode_row
from memory.trust.labels import who_said
from memory.types import utcnow

FORMATS = ("json", "jsonl", "markdown")
EXPORT_FORMAT = "muma-export"
EXPORT_VERSION = 1
MARKDOWN_FENCE = "```jsonl muma-export"
# Insert order on import: every foreign key points at a table earlier in this list.
TABLES: dict[str, Table] = {
    "agents": Agent.__table__,  # type: ignore[dict-item]
    "episodes": Episode.__table__,  # type: ignore[dict-item]
    "notes": Note.__table__,  # type: ignore[dict-item]
    "note_sources": NoteSource.__table__,  # type: ignore[dict-item]
    "links": Link.__table__,  # type: ignore[dict-item]
    "conflicts": Conflict.__table__,  # type: ignore[dict-item]
    "tombstones": Tombstone.__table__,  # type: ignore[dict-item]
    "events": AuditEvent.__table__,  # type: ignore[dict-item]
}
YIELD_PER = 500

Record = tuple[str, dict[str, Any]]


def _queries(viewer: Viewer) -> dict[str, Select[Any]]:
    note_ids = select(Note.id).where(visible_clause(viewer))
    own = {
        "notes": select(Note.__table__)
        .where(visible_clause(viewer))
        .order_by(Note.created_at, Note.version, Note.id),
        "note_sources": select(NoteSource.__table__)
        .where(NoteSource.note_id.in_(note_ids))
        .order_by(NoteSource.note_id, NoteSource.episode_id),
        "links": select(Link.__table__)
        .where(Link.source_id.in_(note_ids), Link.target_id.in_(note_ids))
        .order_by(Link.created_at, Link.id),
    }
    if not viewer.user_level:
        # An episode whose text reached a note the agent may not read (one turn can hold
        # several facts of different visibility) stays out: its text is that note's too.
        cited = select(NoteSource.episode_id).where(NoteSource.note_id.in_(note_ids))
        hidden = select(NoteSource.episode_id).where(NoteSource.note_id.not_in(note_ids))
        own["episodes"] = (
            select(Episode.__table__)
            .where(Episode.id.in_(cited), Episode.id.not_in(hidden))
            .order_by(Episode.seq)
        )
        return own
    scope = {"tenant_id": viewer.tenant_id, "user_id": viewer.user_id}

    def scoped(model: Any) -> Any:
        return and_(*(getattr(model, k) == v for k, v in scope.items()))

    authors = select(Note.agent_id).where(scoped(Note)).distinct()
    own.update(
        agents=select(Agent.__table__)
        .where(Agent.tenant_id == viewer.tenant_id, Agent.agent_id.in_(authors))
        .order_by(Agent.agent_id),
        episodes=select(Episode.__table__).where(scoped(Episode)).order_by(Episode.seq),
        conflicts=select(Conflict.__table__).where(scoped(Conflict)).order_by(Conflict.created_at),
        tombstones=select(Tombstone.__table__)
        .where(scoped(Tombstone))
        .order_by(Tombstone.deleted_at),
        events=select(AuditEvent.__table__).where(scoped(AuditEvent)).order_by(AuditEvent.id),
    )
    return own


def iter_records(*, session: Session, viewer: Viewer) -> Iterator[Record]:
    """(table, encoded row) for everything the viewer may export, in insert order."""
    queries = _queries(viewer)
    for name, table in TABLES.items():
        query = queries.get(name)
        if query is None:
            continue
        rows = session.execute(query.execution_options(yield_per=YIELD_PER)).mappings()
        for row in rows:
            if name == "notes" and not viewer.user_level:
                row = _windows_for(viewer, row)
            yield name, encode_row(table, row)


# A window is ranking data built from the note's neighbours: an agent may not read one
# that only its author may rank by (memory.access.audience.window_readers).
_WINDOW_COLUMNS = {
    "window_text": None,
    "window_terms": None,
    "window_term_count": 0,
    "window_embedding": None,
}


def _windows_for(viewer: Viewer, row: Any) -> Any:
    readers = row["window_readers"]
    if readers is None or viewer.agent_id in readers:
        return row
    return {**row, **_WINDOW_COLUMNS}


def export_header(viewer: Viewer) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "tenant_id": viewer.tenant_id,
        "user_id": viewer.user_id,
        "agent_id": viewer.agent_id,
        "exported_at": utcnow().isoformat(),
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _jsonl(records: Iterator[Record], header: dict[str, Any]) -> Iterator[str]:
    counts = dict.fromkeys(TABLES, 0)
    yield _dumps(header) + "\n"
    for table, row in records:
        counts[table] += 1
        yield _dumps({"table": table, "row": row}) + "\n"
    yield _dumps({"end": True, "counts": counts}) + "\n"


def _json(records: Iterator[Record], header: dict[str, Any]) -> Iterator[str]:
    """One JSON object, written incrementally (records arrive grouped by table)."""
    counts = dict.fromkeys(TABLES, 0)
    yield _dumps(header)[:-1] + ',"tables":{'
    current: str | None = None
    for table, row in records:
        if table != current:
            yield ("]," if current else "") + f'"{table}":['
            current = table
        yield ("," if counts[table] else "") + _dumps(row)
        counts[table] += 1
    yield ("]" if current else "") + '},"counts":' + _dumps(counts) + "}\n"


def _markdown(
    session: Session, viewer: Viewer, records: Iterator[Record], header: dict[str, Any]
) -> Iterator[str]:
    """Readable current memories, then the full jsonl export in a fenced block."""
    notes = list(
        session.scalars(
            select(Note)
            .where(visible_clause(viewer), Note.valid_to.is_(None))
            .where(Note.status.in_(("active", "archived")))
            .order_by(Note.kind, Note.created_at)
        )
    )
    who = f"agent {viewer.agent_id}" if viewer.agent_id else "user level"
    yield (
        f"# Memories of {viewer.user_id}\n\n"
        f"Tenant `{viewer.tenant_id}`, exported {header['exported_at']} ({who}): "
        f"{len(notes)} current memories. Re-import with `muma import <file>`.\n"
    )
    kind = None
    for note in notes:
        if note.kind != kind:
            kind = note.kind
            yield f"\n## {kind}\n"
        yield _markdown_note(note)
    yield f"\n## Full record\n\n{MARKDOWN_FENCE}\n"
    yield from _jsonl(records, header)
    yield "```\n"


def _markdown_note(note: Note) -> str:
    title = note.content.strip().splitlines()[0][:80]
    facts = [f"`{note.id}`", note.domain, note.visibility, f"v{note.version}"]
    facts.append(f"from {who_said(note)}")  # origin and trust, as a context line shows them
    if note.tags:
        facts.append("tags: " + ", ".join(note.tags))
    if note.pinned:
        facts.append("pinned")
    if note.status != "active":
        facts.append(note.status)
    facts.append(f"since {note.valid_from:%Y-%m-%d}")
    return f"\n### {title}\n\n{' · '.join(facts)}\n\n{note.content.strip()}\n"


def export_chunks(
    *,
    session: Session,
    viewer: Viewer,
    fmt: str,
    on_record: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """The export as text chunks; `on_record(table)` is called per row (progress bars)."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    header = export_header(viewer)
    records = iter_records(session=session, viewer=viewer)
    if on_record is not None:
        records = _observed(records, on_record)
    if fmt == "jsonl":
        return _jsonl(records, header)
    if fmt == "json":
        return _json(records, header)
    return _markdown(session, viewer, records, header)


def _observed(records: Iterator[Record], on_record: Callable[[str], None]) -> Iterator[Record]:
    for record in records:
        on_record(record[0])
        yield record
