"""Reading and forgetting notes, always through a Viewer (the access rules)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import cache
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, can_see
from memory.db import CompiledStatement
from memory.episodes.models import Episode
from memory.errors import NotFoundError
from memory.links.models import Link
from memory.notes.models import Note, NoteSource
from memory.types import id_in, id_in_param


def get_visible_note(*, session: Session, viewer: Viewer, note_id: uuid.UUID) -> Note:
    """The note if the viewer may see it; NotFoundError otherwise (existence is not leaked)."""
    note = session.get(Note, note_id)
    if note is None or note.status == "pending" or not can_see(viewer, note):
        raise NotFoundError("no such memory", note_id=str(note_id))
    return note


def note_sources(
    *, session: Session, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Provenance per note: the episodes it came from, oldest first."""
    rows = session.execute(
        select(NoteSource.note_id, Episode.id, Episode.occurred_at, Episode.metadata_)
        .join(Episode, Episode.id == NoteSource.episode_id)
        .where(id_in(NoteSource.note_id, note_ids))
        .order_by(Episode.occurred_at, Episode.seq)
    )
    return _sources_by_note(rows, {i: [] for i in note_ids})


def readable_note_sources(
    *, session: Session, note_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Provenance of the notes this session can read, oldest first, in one statement: a
    note the session cannot read (row-level security after `scope_session`) is absent
    from the result, a readable note without sources maps to []."""
    return _sources_by_note(_sources_statement().rows(session, {"ids": note_ids}), {})


@cache
def _sources_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id, Episode.id.label("episode_id"), Episode.occurred_at, Episode.metadata_)
        .outerjoin(NoteSource, NoteSource.note_id == Note.id)
        .outerjoin(Episode, Episode.id == NoteSource.episode_id)
        .where(id_in_param(Note.id, "ids"))
        .order_by(Episode.occurred_at, Episode.seq)
    )


def _sources_by_note(
    rows: Iterable[Any], out: dict[uuid.UUID, list[dict[str, Any]]]
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """(note id, episode id, occurred_at, metadata) rows grouped per note into `out`; a
    row without an episode (outer join) only marks its note as present."""
    for note_id, episode_id, occurred_at, metadata in rows:
        found = out.setdefault(note_id, [])
        if episode_id is not None:
            found.append(
                {"episode_id": episode_id, "occurred_at": occurred_at, "metadata": metadata}
            )
    return out


def note_links(*, session: Session, viewer: Viewer, note_id: uuid.UUID) -> list[dict[str, Any]]:
    """Outgoing and incoming links to notes the viewer may also see."""
    rows = session.execute(
        select(Link, Note).join(
            Note,
            or_(
                (Link.target_id == Note.id) & (Link.source_id == note_id),
                (Link.source_id == Note.id) & (Link.target_id == note_id),
            ),
        )
    ).all()
    return [
        {
            "note_id": str(other.id),
            "kind": link.kind,
            "weight": link.weight,
            "direction": "out" if link.source_id == note_id else "in",
        }
        for link, other in rows
        if can_see(viewer, other)
    ]


def note_history(*, session: Session, viewer: Viewer, note_id: uuid.UUID) -> list[Note]:
    """Every version of the note's lineage, oldest first (closed versions included)."""
    note = session.get(Note, note_id)
    if note is None or not can_see(viewer, note):
        raise NotFoundError("no such memory", note_id=str(note_id))
    versions = session.scalars(
        select(Note)
        .where(Note.lineage_id == note.lineage_id, Note.status != "pending")
        .order_by(Note.version, Note.created_at)
    )
    return [v for v in versions if can_see(viewer, v)]


def episode_outcome(
    *, session: Session, episode_id: uuid.UUID
) -> tuple[str, str | None, list[uuid.UUID]]:
    """(status, decision, ids of the active notes carrying the episode's facts)."""
    episode = session.get(Episode, episode_id)
    if episode is None:
        raise NotFoundError("no such episode", episode_id=str(episode_id))
    note_ids = list(
        session.scalars(
            select(Note.id)
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id == episode_id, Note.status == "active")
        )
    )
    return episode.status, episode.decision, note_ids
