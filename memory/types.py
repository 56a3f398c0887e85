"""Shared column types and vocabularies for the data model (DESIGN.md §3)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import DateTime
from sqlalchemy.dialects.postgresql import UUID

EMBEDDING_DIMENSION = 384

ROLES = ("user", "assistant", "tool", "system")
EPISODE_STATUSES = ("queued", "processing", "done", "failed")
NOTE_KINDS = ("stable", "preference", "episodic", "ephemeral", "decision", "knowledge")
VISIBILITIES = ("open", "scoped", "private", "user-only")
NOTE_STATUSES = ("pending", "active", "archived", "deleted")
LINK_KINDS = ("related", "derived_from", "supersedes", "contradicts", "consolidates")
LINK_CREATORS = ("pipeline", "user", "agent")
TOKEN_ROLES = ("agent", "viewer", "operator", "admin")
CONFLICT_CLASSES = ("compatible", "contradictory", "subsumes", "ambiguous")
CONFLICT_STATUSES = ("open", "resolved")

Uuid = UUID(as_uuid=True)
Timestamp = DateTime(timezone=True)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> uuid.UUID:
    return uuid.uuid4()


def check_in(column: str, values: tuple[str, ...]) -> str:
    """SQL for a CHECK constraint restricting `column` to a vocabulary."""
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"
