"""Listing notes for people (dashboard, GET /v1/memories) and the users of a tenant.

Invariants: every note query goes through `visible_clause`, so a listing never shows a
note the viewer could not read by id, and never crosses tenant or user; `total` counts
exactly the rows the same filters select; `pending` notes are never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.activation.model import base_level, retention
from memory.config import Settings
from memory.episodes.models import Episode
from memory.notes.models import Note

STATUS_FILTERS = ("active", "archived", "deleted", "closed", "all")


@dataclass(frozen=True)
class BrowseFilters:
    """What GET /v1/memories filters on; None means "any". Times bound `occurred_at`."""

    author: str | None = None
    kind: str | None = None
    domain: str | None = None
    visibility: str | None = None
    status: str = "active"
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None


def _status_clause(status: str) -> ColumnElement[bool]:
    current = Note.valid_to.is_(None)
    clauses: dict[str, ColumnElement[bool]] = {
        "active": and_(Note.status == "active", current),
        "archived": and_(Note.status == "archived", current),
        "deleted": Note.status == "deleted",
        "closed": and_(Note.status.in_(("active", "archived")), Note.valid_to.is_not(None)),
        "all": Note.status != "pending",
    }
    return clauses[status]


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def browse_clause(viewer: Viewer, filters: BrowseFilters) -> ColumnElement[bool]:
    parts = [visible_clause(viewer), _status_clause(filters.status)]
    equal = {
        Note.agent_id: filters.author,
        Note.kind: filters.kind,
        Note.domain: filters.domain,
        Note.visibility: filters.visibility,
    }
    parts += [column == value for column, value in equal.items() if value is not None]
    if filters.since is not None:
        parts.append(Note.occurred_at >= filters.since)
    if filters.until is not None:
        parts.append(Note.occurred_at <= filters.until)
    if filters.text:
        parts.append(Note.content.ilike(_like_pattern(filters.text), escape="\\"))
    return and_(*parts)


def list_notes(
    *, session: Session, viewer: Viewer, filters: BrowseFilters, limit: int, offset: int
) -> tuple[list[Note], int]:
    """(one page of notes, newest occurrence first; the number of all matching notes)."""
    where = browse_clause(viewer, filters)
    total = int(session.scalar(select(func.count()).select_from(Note).where(where)) or 0)
    rows = session.scalars(
        select(Note)
        .where(where)
        .order_by(Note.occurred_at.desc(), Note.created_at.desc(), Note.id)
        .limit(limit)
        .offset(offset)
    )
    return list(rows), total


def display_status(note: Note) -> str:
    """`closed` for a superseded version, else the stored status."""
    if note.valid_to is not None and note.status in ("active", "archived"):
        return "closed"
    return note.status


def note_activation(note: Note, settings: Settings, now: datetime) -> dict[str, float | None]:
    """Base level B and retention R of the note now (None when B is -inf)."""
    b = base_level(
        list(note.access_times or []),
        now,
        decay=settings.activation.decay_parameter,
        total_count=note.access_count,
        first_access=note.first_access_at,
    )
    r = retention(note.last_access_at, now, note.half_life_hours)
    return {
        "base_level": round(b, 4) if b != float("-inf") else None,
        "retention": round(r, 4),
    }


def list_item(note: Note, settings: Settings, now: datetime) -> dict[str, Any]:
    return {
        "id": str(note.id),
        "lineage_id": str(note.lineage_id),
        "version": note.version,
        "user_id": note.user_id,
        "agent_id": note.agent_id,
        "content": note.content,
        "context": note.context,
        "tags": list(note.tags or []),
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "pinned": note.pinned,
        "status": display_status(note),
        "importance": note.importance,
        "occurred_at": note.occurred_at.isoformat(),
        "created_at": note.created_at.isoformat(),
        "valid_to": note.valid_to.isoformat() if note.valid_to else None,
        "access_count": note.access_count,
        "last_access_at": note.last_access_at.isoformat(),
        **note_activation(note, settings, now),
    }


def list_users(
    *, session: Session, tenant_id: str, prefix: str | None = None, limit: int = 200
) -> list[dict[str, Any]]:
    """Users of a tenant (anyone with an episode or a note), most current notes first."""
    current = and_(Note.status == "active", Note.valid_to.is_(None))
    note_rows = session.execute(
        select(Note.user_id, func.count().filter(current), func.max(Note.created_at))
        .where(Note.tenant_id == tenant_id)
        .group_by(Note.user_id)
    )
    episode_rows = session.execute(
        select(Episode.user_id, func.count(), func.max(Episode.occurred_at))
        .where(Episode.tenant_id == tenant_id)
        .group_by(Episode.user_id)
    )
    users: dict[str, dict[str, Any]] = {}
    for user, notes, last in note_rows:
        users[user] = {"user_id": user, "notes": int(notes), "episodes": 0, "last_at": last}
    for user, episodes, last in episode_rows:
        entry = users.setdefault(
            user, {"user_id": user, "notes": 0, "episodes": 0, "last_at": last}
        )
        entry["episodes"] = int(episodes)
        entry["last_at"] = max(filter(None, (entry["last_at"], last)), default=None)
    found = [u for u in users.values() if not prefix or u["user_id"].startswith(prefix)]
    found.sort(key=lambda u: (-u["notes"], -u["episodes"], u["user_id"]))
    for user in found:
        user["last_at"] = user["last_at"].isoformat() if user["last_at"] else None
    return found[:limit]
