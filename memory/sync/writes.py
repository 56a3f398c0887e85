"""The store side of a sync: a file's edit, a new file, a deleted file, each audited.

Invariants: every change goes through the same domain functions as the API (patch_note,
capture_episodes, forget_memory); each runs in a savepoint, so a refused edit of one file
(invalid kind, empty body) rolls back alone and the rest of the sync proceeds.
"""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.clients.embedder import Embedder
from memory.config import Settings
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.erasure.forget import forget_memory
from memory.errors import InvalidInputError
from memory.notes.admin import NotePatch, patch_note
from memory.notes.models import Note
from memory.sync.files import ParsedFile, digest
from memory.types import NOTE_KINDS, VISIBILITIES

SYNC_ACTOR = "sync"


def _parsed(parsed: ParsedFile | None) -> ParsedFile:
    if parsed is None:
        raise InvalidInputError("the file could not be parsed")
    if not parsed.body:
        raise InvalidInputError("the file is empty; delete it to forget the memory")
    return parsed


def apply_edit(
    *,
    session: Session,
    viewer: Viewer,
    note: Note,
    parsed: ParsedFile | None,
    settings: Settings,
    embedder: Embedder,
    file_name: str,
) -> Note:
    """The note after applying the file: new content is a new version, keys change in place."""
    parsed = _parsed(parsed)
    wanted = parsed.editable()
    content = parsed.body if parsed.body != note.content.strip() else None
    patch = NotePatch(content=content, **wanted)
    if not patch.requested():
        return note
    with session.begin_nested():
        new, _ = patch_note(
            session=session,
            viewer=viewer,
            note_id=note.id,
            patch=patch,
            actor=f"{SYNC_ACTOR}:{file_name}"[:160],
            settings=settings,
            embedder=embedder,
        )
    return new


def capture_file(
    *,
    session: Session,
    viewer: Viewer,
    settings: Settings,
    parsed: ParsedFile | None,
    file_name: str,
    file_hash: str,
) -> uuid.UUID:
    """Persist a new file as an episode for the write path; the caller enqueues it."""
    parsed = _parsed(parsed)
    options = parsed.editable()
    if options.get("kind") not in (None, *NOTE_KINDS):
        raise InvalidInputError(f"kind must be one of {', '.join(NOTE_KINDS)}")
    if options.get("visibility") not in (None, *VISIBILITIES):
        raise InvalidInputError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if len(parsed.body.encode()) > settings.api.max_content_bytes:
        raise InvalidInputError(f"longer than maxContentBytes ({settings.api.max_content_bytes})")
    key = f"{SYNC_ACTOR}:{viewer.user_id}:{digest((file_name + file_hash).encode())[:40]}"
    episode = EpisodeInput(
        user_id=viewer.user_id,
        agent_id=settings.sync.agent_id,
        # One session per file: files are not a conversation, so none is another's context.
        session_id=f"{SYNC_ACTOR}:{file_name}"[:128],
        role="user",
        content=parsed.body,
        metadata={"sync_file": file_name},
        idempotency_key=key,
        options=options,
        source=SYNC_ACTOR,
    )
    [(episode_id, _)] = capture_episodes(
        session=session, tenant_id=viewer.tenant_id, episodes=[episode]
    )
    return episode_id


def forget_file_note(*, session: Session, viewer: Viewer, note: Note, file_name: str) -> None:
    with session.begin_nested():
        forget_memory(
            session=session,
            viewer=viewer,
            note_id=note.id,
            actor=SYNC_ACTOR,
            reason=f"file {file_name} deleted",
        )
