"""Dead letters: failed work kept with full context; retrying requeues it once.

Ownership: a letter belongs to its tenant and to the user of its episode (`episode_id`;
the task's args name that episode's ids only, see `record_task_failure`). Listing,
counting and retrying for one user (`user_id`) see only that user's letters; a letter
with no episode belongs to no user and is seen only tenant-wide (or by the CLI).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, exists, func, select, true, update
from sqlalchemy.orm import Session

from memory.episodes.models import Episode
from memory.errors import NotFoundError
from memory.notes.models import NoteSource
from memory.ops.models import DeadLetter
from memory.types import utcnow


@dataclass(frozen=True)
class TaskFailure:
    """A task's last failed attempt: what is needed to run it again."""

    task_name: str
    args: list[Any]
    kwargs: dict[str, Any]
    error: str
    traceback: str | None
    attempts: int


def record_task_failure(
    *, session: Session, failure: TaskFailure, episode_id: str | None = None
) -> list[DeadLetter]:
    """One dead letter per episode the failed task concerned, each retried alone.

    A stage task's first argument is a list of episode ids or of note ids (traced to
    their episodes); each letter keeps the part of that list its episode owns, so a retry
    runs only that episode's work. Work that names no episode gets one letter, visible to
    admins only (it has no tenant).
    """
    if episode_id is not None:
        groups = {uuid.UUID(str(episode_id)): failure.args}
    else:
        groups = _split_by_episode(session, failure.args)
    if not groups:
        return [_add_letter(session, failure, failure.args, None)]
    return [_add_letter(session, failure, args, owner) for owner, args in groups.items()]


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
    """Store one failure of one episode (or of none); the episode is marked failed."""
    failure = TaskFailure(task_name, args, kwargs, error, traceback, attempts)
    return _add_letter(session, failure, args, episode_id)


def _add_letter(
    session: Session, failure: TaskFailure, args: list[Any], episode_id: uuid.UUID | None
) -> DeadLetter:
    """The letter, with its episode's tenant; an unfinished episode becomes `failed`
    (kept, never dropped), a finished one keeps its status (its notes are searchable).

    Only the episode's tenant and status are read, never the whole row: a row a client
    cannot read whole (a value outside Python's range, the reason it failed) must still
    get its letter. PostgreSQL stores no NUL character, so none is kept in the text."""
    tenant_id = None
    found = None
    if episode_id is not None:
        owner = select(Episode.tenant_id, Episode.status).where(Episode.id == episode_id)
        found = session.execute(owner).first()
    error = failure.error.replace("\x00", "")
    if found is not None:
        tenant_id = found.tenant_id
        if found.status != "done":
            failed = {"status": "failed", "error": error[:4000]}
            session.execute(update(Episode).where(Episode.id == episode_id).values(**failed))
    letter = DeadLetter(
        tenant_id=tenant_id,
        task_name=failure.task_name,
        args=args,
        kwargs=failure.kwargs,
        error=error,
        traceback=failure.traceback.replace("\x00", "") if failure.traceback else None,
        attempts=failure.attempts,
        episode_id=episode_id,
    )
    session.add(letter)
    session.flush()
    return letter


def _split_by_episode(session: Session, args: list[Any]) -> dict[uuid.UUID, list[Any]]:
    """{episode id: the task's args with only that episode's ids in the first argument}.

    The first argument is one id, a list of ids, or a mapping keyed by ids (evolve's);
    ids are episodes' or notes' (a note stands for its first source episode).
    """
    first = args[0] if args else None
    ids = _uuid_list(list(first) if isinstance(first, dict | list) else [first])
    if not ids:
        return {}
    owners = {i: i for i in session.scalars(select(Episode.id).where(Episode.id.in_(ids)))}
    rows = session.execute(
        select(NoteSource.note_id, NoteSource.episode_id).where(NoteSource.note_id.in_(ids))
    )
    for note_id, owner in rows:
        owners.setdefault(note_id, owner)  # a merged note's first source is enough
    groups: dict[uuid.UUID, list[uuid.UUID]] = {}
    for item in ids:
        if item in owners:
            groups.setdefault(owners[item], []).append(item)
    return {owner: [_part(first, members), *args[1:]] for owner, members in groups.items()}


def _part(first: Any, members: list[uuid.UUID]) -> Any:
    """The first argument cut down to `members`, in its own shape."""
    if isinstance(first, dict):
        wanted = {str(m) for m in members}
        return {key: value for key, value in first.items() if str(key) in wanted}
    if isinstance(first, list):
        return [str(m) for m in members]
    return first


def _uuid_list(values: list[Any]) -> list[uuid.UUID]:
    try:
        return [uuid.UUID(str(value)) for value in values]
    except ValueError:
        return []


def _owned_by(user_id: str | None) -> ColumnElement[bool]:
    """Letters of `user_id`'s episodes (of the letter's own tenant); every letter if None."""
    if user_id is None:
        return true()
    return exists().where(
        Episode.id == DeadLetter.episode_id,
        Episode.tenant_id == DeadLetter.tenant_id,
        Episode.user_id == user_id,
    )


def _scoped(query: Select[Any], tenant_id: str | None, user_id: str | None) -> Select[Any]:
    if tenant_id is not None:
        query = query.where(DeadLetter.tenant_id == tenant_id)
    return query.where(_owned_by(user_id))


def list_dead_letters(
    *,
    session: Session,
    tenant_id: str | None,
    include_requeued: bool = False,
    limit: int = 100,
    user_id: str | None = None,
) -> list[DeadLetter]:
    """Newest first; of `tenant_id` (None: every tenant) and, given, of `user_id` only."""
    query = select(DeadLetter).order_by(DeadLetter.last_failed_at.desc()).limit(limit)
    query = _scoped(query, tenant_id, user_id)
    if not include_requeued:
        query = query.where(DeadLetter.requeued_at.is_(None))
    return list(session.scalars(query))


def count_dead_letters(
    *, session: Session, tenant_id: str | None, user_id: str | None = None
) -> int:
    """Open (not requeued) letters of `tenant_id` and, given, of `user_id` only."""
    query = select(func.count()).select_from(DeadLetter).where(DeadLetter.requeued_at.is_(None))
    return int(session.scalar(_scoped(query, tenant_id, user_id)) or 0)


def mark_for_retry(
    *,
    session: Session,
    dead_letter_id: uuid.UUID,
    tenant_id: str | None,
    user_id: str | None = None,
) -> DeadLetter:
    """Mark a dead letter requeued (its episode back to `queued`); the caller enqueues it.

    NotFoundError for a letter of another tenant or, given `user_id`, of another user (or
    of no user): its existence is not revealed.
    """
    query = _scoped(select(DeadLetter).where(DeadLetter.id == dead_letter_id), tenant_id, user_id)
    letter = session.scalar(query)
    if letter is None:
        raise NotFoundError("no such dead letter", dead_letter_id=str(dead_letter_id))
    letter.requeued_at = utcnow()
    if letter.episode_id is not None:
        episode = session.get(Episode, letter.episode_id)
        if episode is not None and episode.status == "failed":
            episode.status = "queued"
            episode.error = None
    session.flush()
    return letter
