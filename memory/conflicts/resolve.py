"""Listing and resolving conflicts through a Viewer (DESIGN.md §6-7).

Invariants: a viewer lists only conflicts of its own user whose two notes it may both
see (the access rule is applied in SQL on both notes); resolution closes the losing
version bi-temporally (valid_to, superseded_by, a `supersedes` link, unindexed from the
BM25 statistics) and never deletes it; a merge writes a new version of the kept note
(through notes.admin.patch_note) that supersedes both; a resolved conflict cannot be
resolved again; everything is audited.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from sqlalchemy import desc, select
from sqlalchemy.orm import Session, aliased

from memory.access.policy import Viewer, visible_clause
from memory.clients.embedder import Embedder
from memory.config import Settings
from memory.conflicts.models import Conflict
from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.links.models import Link
from memory.notes.admin import NotePatch, patch_note
from memory.notes.lexicon import unindex_note_terms
from memory.notes.models import Note, NoteSource
from memory.notes.window_text import close_window
from memory.ops.audit import record_event

Keep = Literal["a", "b", "both"]
NoteA = aliased(Note, name="note_a")
NoteB = aliased(Note, name="note_b")


def list_conflicts(
    *,
    session: Session,
    viewer: Viewer,
    status: str | None = "open",
    classification: str | None = None,
    limit: int = 100,
) -> list[tuple[Conflict, Note, Note]]:
    """The user's conflicts whose two notes the viewer may see; cross-agent first, newest first."""
    query = (
        select(Conflict, NoteA, NoteB)
        .join(NoteA, NoteA.id == Conflict.note_a_id)
        .join(NoteB, NoteB.id == Conflict.note_b_id)
        .where(
            Conflict.tenant_id == viewer.tenant_id,
            Conflict.user_id == viewer.user_id,
            visible_clause(viewer, NoteA),
            visible_clause(viewer, NoteB),
        )
        .order_by(
            (Conflict.agent_a_id == Conflict.agent_b_id), desc(Conflict.created_at), Conflict.id
        )
        .limit(limit)
    )
    if status:
        query = query.where(Conflict.status == status)
    if classification:
        query = query.where(Conflict.classification == classification)
    else:  # compatible pairs are bookkeeping (classified once), not findings
        query = query.where(Conflict.classification != "compatible")
    return [(c, a, b) for c, a, b in session.execute(query)]


def _locked(session: Session, viewer: Viewer, conflict_id: uuid.UUID) -> Conflict:
    conflict = session.get(Conflict, conflict_id, with_for_update=True)
    if (
        conflict is None
        or conflict.tenant_id != viewer.tenant_id
        or conflict.user_id != viewer.user_id
    ):
        raise NotFoundError("no such conflict", conflict_id=str(conflict_id))
    if conflict.status == "resolved":
        raise ConflictError("conflict already resolved", conflict_id=str(conflict_id))
    return conflict


def _supersede(session: Session, loser: Note, winner: Note, now: datetime, actor: str) -> None:
    """Close `loser` in favour of `winner` (idempotent for an already closed version)."""
    if loser.valid_to is not None:
        return
    if loser.status == "active":
        unindex_note_terms(session=session, notes=[loser])
    loser.valid_to, loser.superseded_by = now, winner.id
    close_window(loser)
    session.add(
        Link(
            tenant_id=winner.tenant_id,
            user_id=winner.user_id,
            source_id=winner.id,
            target_id=loser.id,
            kind="supersedes",
            weight=1.0,
            created_by="user",
        )
    )
    record_event(
        session=session,
        tenant_id=loser.tenant_id,
        user_id=loser.user_id,
        actor=actor,
        action="note.superseded",
        entity_type="note",
        entity_id=str(loser.id),
        reason="conflict resolution",
        data={"superseded_by": str(winner.id)},
    )


def _current(note: Note, side: str) -> None:
    if note.status != "active" or note.valid_to is not None:
        raise ConflictError(
            f"note {side} changed since the conflict was found; resolve it again later",
            note_id=str(note.id),
        )


def resolve_conflict(
    *,
    session: Session,
    viewer: Viewer,
    conflict_id: uuid.UUID,
    keep: Keep,
    actor: str,
    now: datetime,
    settings: Settings,
    embedder: Embedder | None = None,
    merged_content: str | None = None,
) -> Conflict:
    """Resolve: keep a (close b), keep b (close a), both (no change), or merge."""
    if keep not in ("a", "b", "both"):
        raise InvalidInputError("keep must be one of a, b, both", field="keep")
    conflict = _locked(session, viewer, conflict_id)
    a = session.get(Note, conflict.note_a_id, with_for_update=True)
    b = session.get(Note, conflict.note_b_id, with_for_update=True)
    assert a is not None and b is not None  # rows cascade with the conflict
    resolution: dict[str, object] = {**(conflict.resolution or {}), "keep": keep, "by": actor}
    if merged_content is not None:
        if embedder is None:
            raise InvalidInputError("merging needs an embedder")
        base, other = (b, a) if keep == "b" else (a, b)
        _current(base, "b" if keep == "b" else "a")
        merged, _ = patch_note(
            session=session,
            viewer=viewer,
            note_id=base.id,
            patch=NotePatch(content=merged_content),
            actor=actor,
            settings=settings,
            embedder=embedder,
        )
        _supersede(session, other, merged, now, actor)
        _cite(session, other, merged)
        resolution["merged_note_id"] = str(merged.id)
    elif keep in ("a", "b"):
        winner, loser = (a, b) if keep == "a" else (b, a)
        _current(winner, keep)
        _supersede(session, loser, winner, now, actor)
    conflict.status, conflict.resolved_at, conflict.resolution = "resolved", now, resolution
    record_event(
        session=session,
        tenant_id=conflict.tenant_id,
        user_id=conflict.user_id,
        actor=actor,
        action="conflict.resolved",
        entity_type="conflict",
        entity_id=str(conflict.id),
        data={k: v for k, v in resolution.items() if k != "detection"},
    )
    session.flush()
    return conflict


def _cite(session: Session, old: Note, new: Note) -> None:
    """The merged version also cites the episodes of the note it absorbed."""
    episodes: Sequence[uuid.UUID] = list(
        session.scalars(select(NoteSource.episode_id).where(NoteSource.note_id == old.id))
    )
    for episode_id in episodes:
        session.merge(NoteSource(note_id=new.id, episode_id=episode_id, relation="merged"))
