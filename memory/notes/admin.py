"""Editing a memory: attributes in place, content as a new version (bi-temporal).

Invariants:
- Only the current version (status active, valid_to NULL) of a note the viewer can see
  may be edited; anything else is NotFoundError (invisible) or ConflictError (closed).
  The note row is locked (FOR UPDATE) for the edit, so concurrent edits serialise.
- An agent viewer may change `visibility` or `domain` (who can see the note) only on
  notes it authored, so no agent can widen the audience of another agent's note. A new
  audience refreshes the windows around the note and withdraws what evolution copied
  into it or out of it that may no longer flow (memory.access.audience).
- visibility, pinned, tags, domain and kind change in place; a content change closes the
  current version (valid_to, superseded_by) and writes version+1 with the same lineage,
  the same author, turn and provenance, a `supersedes` link, an embedding computed here
  and a window vector derived from its neighbours (memory.notes.window).
  The new version is written active directly, not through the decide stage: decide
  could merge it into another note (NOOP) or re-target it, losing the edit's lineage.
- BM25 statistics follow: the closed version is unindexed, the new one indexed.
- Every change is audited with its old and new values.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.activation.model import initial_half_life
from memory.clients.embedder import Embedder
from memory.clients.sparse_encoder import get_sparse_encoder
from memory.config import Settings
from memory.episodes.models import Episode
from memory.errors import AccessDeniedError, ConflictError, InvalidInputError
from memory.links.evolution import withdraw_disallowed
from memory.links.models import Link
from memory.notes.construct import (
    extract_keywords,
    indexed_texts,
    make_context,
    speaker_label,
)
from memory.notes.embed import note_sparse_vector
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms, unindex_note_terms
from memory.notes.models import Note, NoteSource
from memory.notes.service import get_visible_note
from memory.notes.window import lock_note_windows, refresh_windows
from memory.notes.window_text import close_window
from memory.ops.audit import record_event
from memory.trust.instructions import looks_like_instruction
from memory.types import NOTE_KINDS, VISIBILITIES, utcnow

IN_PLACE_FIELDS = ("visibility", "pinned", "tags", "domain", "kind")
AUDIENCE_FIELDS = ("visibility", "domain")


@dataclass(frozen=True)
class NotePatch:
    """Requested changes; None leaves a field as it is."""

    visibility: str | None = None
    pinned: bool | None = None
    tags: list[str] | None = None
    domain: str | None = None
    kind: str | None = None
    content: str | None = None

    def requested(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


def _validate(patch: NotePatch) -> None:
    if not patch.requested():
        raise InvalidInputError("nothing to change: give at least one field to update")
    if patch.visibility is not None and patch.visibility not in VISIBILITIES:
        raise InvalidInputError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if patch.kind is not None and patch.kind not in NOTE_KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(NOTE_KINDS)}")
    if patch.content is not None and not patch.content.strip():
        raise InvalidInputError("content must not be empty")
    if patch.domain is not None and not patch.domain.strip():
        raise InvalidInputError("domain must not be empty")


def _check_rights(viewer: Viewer, note: Note, changes: dict[str, Any]) -> None:
    audience = [f for f in AUDIENCE_FIELDS if f in changes]
    if audience and not viewer.user_level and note.agent_id != viewer.agent_id:
        raise AccessDeniedError(
            f"only the authoring agent or the user may change {' and '.join(audience)}",
            note_id=str(note.id),
        )


def _diff(note: Note, patch: NotePatch) -> dict[str, Any]:
    """The requested fields whose value differs from the note's (tags deduplicated)."""
    wanted = patch.requested()
    if "tags" in wanted:
        wanted["tags"] = list(dict.fromkeys(t.strip() for t in wanted["tags"] if t.strip()))
    if "domain" in wanted:
        wanted["domain"] = wanted["domain"].strip()
    current = {f: getattr(note, f) for f in (*IN_PLACE_FIELDS, "content")}
    current["tags"] = list(current["tags"] or [])
    return {k: v for k, v in wanted.items() if v != current[k]}


def patch_note(
    *,
    session: Session,
    viewer: Viewer,
    note_id: uuid.UUID,
    patch: NotePatch,
    actor: str,
    settings: Settings,
    embedder: Embedder,
) -> tuple[Note, dict[str, dict[str, Any]]]:
    """Apply `patch`; return the current version afterwards and {field: {old, new}}."""
    _validate(patch)
    note = get_visible_note(session=session, viewer=viewer, note_id=note_id)
    # A new version or a new audience refreshes windows: the session lock comes first.
    reaudience = any(getattr(patch, f) is not None for f in AUDIENCE_FIELDS)
    seeds = (
        lock_note_windows(session=session, note_ids=[note.id])
        if patch.content is not None or reaudience
        else None
    )
    # Serialise edits of one note: two concurrent revisions must not both close it.
    session.refresh(note, with_for_update=True)
    if note.status != "active" or note.valid_to is not None:
        raise ConflictError(
            "only the current version of an active memory can be edited",
            note_id=str(note.id),
            superseded_by=str(note.superseded_by) if note.superseded_by else None,
        )
    changes = _diff(note, patch)
    _check_rights(viewer, note, changes)
    if not changes:
        return note, {}
    recorded = {k: {"old": _plain(getattr(note, k)), "new": v} for k, v in changes.items()}
    in_place = {k: v for k, v in changes.items() if k != "content"}
    if "content" in changes:
        note = _new_version(
            session,
            note,
            changes["content"],
            in_place,
            settings,
            embedder,
            created_by="user" if viewer.user_level else "agent",
        )
    else:
        _set_fields(note, in_place, settings)
        if seeds is not None and any(f in in_place for f in AUDIENCE_FIELDS):
            # Who may read the note changed: what its window and evolved words may hold,
            # and which neighbours' may hold its words (memory.access.audience).
            refresh_windows(session=session, seeds=seeds)
            withdraw_disallowed(session=session, note_ids=[note.id])
    session.flush()
    record_event(
        session=session,
        tenant_id=note.tenant_id,
        user_id=note.user_id,
        actor=actor,
        action="note.updated" if "content" in changes else "note.edited",
        entity_type="note",
        entity_id=str(note.id),
        data={"changes": recorded, "agent_id": viewer.agent_id, "previous": str(note_id)},
    )
    return note, recorded


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value


def _set_fields(note: Note, changes: dict[str, Any], settings: Settings) -> None:
    if "kind" in changes and changes["kind"] != note.kind:
        # Keep the growth already earned; rescale by the kinds' half-life multipliers.
        old_base = initial_half_life(note.kind, settings.activation)
        new_base = initial_half_life(changes["kind"], settings.activation)
        note.half_life_hours = note.half_life_hours * new_base / old_base
    for key, value in changes.items():
        setattr(note, key, list(value) if key == "tags" else value)
    note.updated_at = utcnow()


def _label(session: Session, note: Note) -> str:
    """Who said it, as the note's indexed text names them (from its first source)."""
    role = session.scalar(
        select(Episode.role)
        .join(NoteSource, NoteSource.episode_id == Episode.id)
        .where(NoteSource.note_id == note.id)
        .order_by(Episode.seq)
        .limit(1)
    )
    return speaker_label(note.speaker, role or "user", note.agent_id)


def _new_version(
    session: Session,
    old: Note,
    content: str,
    changes: dict[str, Any],
    settings: Settings,
    embedder: Embedder,
    created_by: str,
) -> Note:
    label = _label(session, old)
    # The window is the own line until refresh_windows below adds the neighbours.
    index_text, window_text, embed_text = indexed_texts(label, content, old.occurred_at)
    embedding = embedder.embed_one(embed_text)
    now = utcnow()
    new = Note(
        id=uuid.uuid4(),
        lineage_id=old.lineage_id,
        version=old.version + 1,
        **{c: getattr(old, c) for c in _CARRIED},
        content=content,
        instruction_like=looks_like_instruction(content),
        context=make_context(label, content),
        keywords=extract_keywords(content, exclude=[label]),
        tags=list(old.tags or []),
        access_times=list(old.access_times or []),
        metadata_=dict(old.metadata_ or {}),
        status="active",
        created_at=now,
        updated_at=now,
        valid_from=now,
        index_text=index_text,
        window_text=window_text,
        embed_text=embed_text,
        embedding=embedding,
        embedding_model=embedder.model_id,
        sparse_embedding=note_sparse_vector(get_sparse_encoder(settings), old.speaker, content),
    )
    _set_fields(new, changes, settings)
    apply_terms(new, note_terms(new))
    unindex_note_terms(session=session, notes=[old])
    session.add(new)
    session.flush()  # the new row first: superseded_by and the link point at it
    old.valid_to, old.superseded_by = now, new.id
    close_window(old)
    _carry_provenance(session, old, new, created_by)
    index_note_terms(session=session, notes=[new])
    session.flush()  # the old version closed: the window reads the current versions only
    seeds = lock_note_windows(session=session, note_ids=[new.id])
    refresh_windows(session=session, seeds=seeds)
    return new


def _carry_provenance(session: Session, old: Note, new: Note, created_by: str) -> None:
    """The new version cites the old one's episodes and `supersedes` it."""
    sources = session.scalars(select(NoteSource.episode_id).where(NoteSource.note_id == old.id))
    session.add_all(NoteSource(note_id=new.id, episode_id=e, relation="revised") for e in sources)
    session.add(
        Link(
            tenant_id=new.tenant_id,
            user_id=new.user_id,
            source_id=new.id,
            target_id=old.id,
            kind="supersedes",
            weight=1.0,
            created_by=created_by,
        )
    )


# Columns a new version inherits unchanged from the version it replaces.
_CARRIED = (
    "tenant_id",
    "user_id",
    "agent_id",
    "session_id",
    "turn_seq",
    "speaker",
    "kind",
    "domain",
    "visibility",
    "pinned",
    "importance",
    "occurred_at",
    "expires_at",
    "access_count",
    "first_access_at",
    "last_access_at",
    "half_life_hours",
    "origin",
    "origin_ref",
    "trust",
    "review",
)
