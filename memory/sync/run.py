"""The working state of one sync run, and the helpers every step shares."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.clients.embedder import Embedder
from memory.config import Settings
from memory.links.models import Link
from memory.notes.models import Note
from memory.sync import files as f
from memory.sync.files import FileEntry, ScannedFile, SyncState
from memory.sync.plan import FileOp, SyncPlan, SyncReport

GONE = "gone"  # the revision of a note that is no longer active and current
STALE = "stale"  # the revision recorded for a file naming an older version of its note


@dataclass
class SyncRun:
    session: Session
    viewer: Viewer
    settings: Settings
    embedder: Embedder
    plan: SyncPlan
    files: dict[str, ScannedFile]
    current: dict[str, Note]  # lineage id -> the active, current version
    links: dict[uuid.UUID, list[dict[str, str]]] = field(default_factory=dict)

    @property
    def state(self) -> SyncState:
        return self.plan.state

    @property
    def report(self) -> SyncReport:
        return self.plan.report


def load_links(
    session: Session, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[dict[str, str]]]:
    """Each note's links as {id, kind}, plus `direction` when the link is one-way."""
    seen: dict[uuid.UUID, dict[tuple[str, str], set[str]]] = {i: {} for i in note_ids}
    if note_ids:
        rows = session.scalars(
            select(Link).where(or_(Link.source_id.in_(note_ids), Link.target_id.in_(note_ids)))
        )
        for link in rows:
            for mine, other, way in (
                (link.source_id, link.target_id, "out"),
                (link.target_id, link.source_id, "in"),
            ):
                if mine in seen:
                    seen[mine].setdefault((link.kind, str(other)), set()).add(way)
    return {
        note_id: [
            {
                "id": other,
                "kind": kind,
                **({"direction": next(iter(ways))} if len(ways) == 1 else {}),
            }
            for (kind, other), ways in sorted(edges.items())
        ]
        for note_id, edges in seen.items()
    }


def render(run: SyncRun, note: Note) -> str:
    if note.id not in run.links:
        run.links.update(load_links(run.session, [note.id]))
    return f.render_note(note, run.links[note.id])


def revision(note: Note | None) -> str:
    return f.note_revision(note) if note is not None else GONE


def write_file(
    run: SyncRun, name: str, note: Note, expect: str | None, fallback: FileEntry | None
) -> None:
    text = render(run, note)
    run.plan.ops.append(FileOp(name, text, expect, fallback))
    run.state.files[name] = FileEntry(
        str(note.lineage_id), str(note.id), f.note_revision(note), f.digest(text.encode())
    )
