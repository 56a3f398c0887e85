"""Conflicts: pairs of notes about the same subject that may disagree."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import (
    CONFLICT_CLASSES,
    CONFLICT_STATUSES,
    Timestamp,
    Uuid,
    check_in,
    new_id,
    utcnow,
)


class Conflict(Base):
    __tablename__ = "conflicts"
    __table_args__ = (
        CheckConstraint(check_in("classification", CONFLICT_CLASSES), name="classification"),
        CheckConstraint(check_in("status", CONFLICT_STATUSES), name="status"),
        CheckConstraint("note_a_id < note_b_id", name="ordered_pair"),
        UniqueConstraint("note_a_id", "note_b_id", name="uq_conflicts_pair"),
        Index("ix_conflicts_scope", "tenant_id", "user_id", "status"),
        # note_a_id is covered by uq_conflicts_pair; deleting a note cascades on both.
        Index("ix_conflicts_note_b", "note_b_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    note_a_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("notes.id", ondelete="CASCADE"))
    note_b_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("notes.id", ondelete="CASCADE"))
    agent_a_id: Mapped[str] = mapped_column(String(128))
    agent_b_id: Mapped[str] = mapped_column(String(128))
    similarity: Mapped[float] = mapped_column(Float)
    classification: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="open")
    resolution: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(Timestamp)
