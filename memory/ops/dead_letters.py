"""Dead letters: failed work kept with full context; retrying requeues it once."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memory.episodes.models import Episode
from memory.errors import NotFoundError
from memory.ops.models import DeadLetter
from memory.types import utcnow


def record_dead_letter(
    *,
    session: Session,
    task_name: str,
    args: list[Any],
    kwargs: dict[str, Any],
    error: str,
    traceback: str | None,
    attempts: int,
    episode_id: uuid.UUID | None,
) -> DeadLetter:
    """Store the failure; an episode it concerns is marked failed, never dropped."""
    tenant_id = None
    if episode_id is None:
        episode_id = _episode_of_notes(session, args)
    if episode_id is not None:
        episode = session.get(Episode, episode_id)
        if episode is not None:
            episode.status = "failed"
            episode.error = error[:4000]
            tenant_id = episode.tenant_id
    letter = DeadLetter(
        tenant_id=tenant_id,
        task_name=task_name,
        args=args,
        kwargs=kwargs,
        error=error,
        traceback=traceback,
        attempts=attempts,
        episode_id=episode_id,
    )
    session.add(letter)
    session.flush()
    return letter


def _episode_of_notes(session: Session, args: list[Any]) -> uuid.UUID | None:
    """For stage tasks whose first argument is a list of note ids: their first episode."""
    from memory.notes.models import NoteSource

    if not args or not isinstance(args[0], list) or not args[0]:
        return None
    try:
        note_id = uuid.UUID(str(args[0][0]))
    except ValueError:
        return None
    return session.scalar(
        select(NoteSource.episode_id).where(NoteSource.note_id == note_id).limit(1)
    )


def list_dead_letters(
    *, session: Session, tenant_id: str | None, include_requeued: bool = False, limit: int = 100
) -> list[DeadLetter]:
    query = select(DeadLetter).order_by(DeadLetter.last_failed_at.desc()).limit(limit)
    if tenant_id is not None:
        query = query.where(DeadLetter.tenant_id == tenant_id)
    if not include_requeued:
        query = query.where(DeadLetter.requeued_at.is_(None))
    return list(session.scalars(query))


def count_dead_letters(*, session: Session, tenant_id: str | None) -> int:
    query = select(func.count()).select_from(DeadLetter).where(DeadLetter.requeued_at.is_(None))
    if tenant_id is not None:
        query = query.where(DeadLetter.tenant_id == tenant_id)
    return int(session.scalar(query) or 0)


def mark_for_retry(
    *, session: Session, dead_letter_id: uuid.UUID, tenant_id: str | None
) -> DeadLetter:
    """Mark a dead letter requeued (its episode back to `queued`); the caller enqueues it."""
    letter = session.get(DeadLetter, dead_letter_id)
    if letter is None or (tenant_id is not None and letter.tenant_id != tenant_id):
        raise NotFoundError("no such dead letter", dead_letter_id=str(dead_letter_id))
    letter.requeued_at = utcnow()
    if letter.episode_id is not None:
        episode = session.get(Episode, letter.episode_id)
        if episode is not None and episode.status == "failed":
            episode.status = "queued"
            episode.error = None
    session.flush()
    return letter
