"""Users exist only through their data: a user is known once it has an episode or a note."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.orm import Session

from memory.episodes.models import Episode
from memory.errors import NotFoundError
from memory.notes.models import Note


def user_known(*, session: Session, tenant_id: str, user_id: str) -> bool:
    has_episode = exists().where(Episode.tenant_id == tenant_id, Episode.user_id == user_id)
    has_note = exists().where(Note.tenant_id == tenant_id, Note.user_id == user_id)
    return bool(session.scalar(select(or_(has_episode, has_note))))


def require_known_user(*, session: Session, tenant_id: str, user_id: str) -> None:
    """NotFoundError naming the user and tenant when neither has any data (likely a typo)."""
    if not user_known(session=session, tenant_id=tenant_id, user_id=user_id):
        raise NotFoundError(
            f"unknown user '{user_id}' in tenant '{tenant_id}' (no episodes or memories)",
            user_id=user_id,
            tenant_id=tenant_id,
        )


def user_summary(*, session: Session, tenant_id: str, user_id: str) -> dict[str, Any] | None:
    """One user as `GET /v1/users` lists users (current notes, episodes, last activity),
    counted for that user alone; None when the user has no data."""
    current = and_(Note.status == "active", Note.valid_to.is_(None))
    notes, last_note = session.execute(
        select(func.count().filter(current), func.max(Note.created_at)).where(
            Note.tenant_id == tenant_id, Note.user_id == user_id
        )
    ).one()
    episodes, last_episode = session.execute(
        select(func.count(), func.max(Episode.occurred_at)).where(
            Episode.tenant_id == tenant_id, Episode.user_id == user_id
        )
    ).one()
    last = max(filter(None, (last_note, last_episode)), default=None)
    if last is None:  # neither a note nor an episode: an unknown user
        return None
    return {
        "user_id": user_id,
        "notes": int(notes),
        "episodes": int(episodes),
        "last_at": last.isoformat(),
    }
