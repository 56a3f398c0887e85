"""Operational records: the append-only audit log and the dead-letter table."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Identity, Index, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import Timestamp, Uuid, new_id, utcnow


class AuditEvent(Base):
    """One state change: who did what to which entity, when and why. Never updated."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_scope", "tenant_id", "user_id", "id"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str | None] = mapped_column(String(128))
    actor: Mapped[str] = mapped_column(String(160))
    action: Mapped[str] = mapped_column(String(64))
    entity_type: Mapped[str] = mapped_column(String(32))
    entity_id: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class DeadLetter(Base):
    """A task that failed its last attempt, kept with full context for a retry."""

    __tablename__ = "dead_letters"
    __table_args__ = (Index("ix_dead_letters_open", "requeued_at", "last_failed_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[str | None] = mapped_column(String(128))
    task_name: Mapped[str] = mapped_column(String(128))
    args: Mapped[list[Any]] = mapped_column(JSONB, default=list)
    kwargs: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    episode_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    error: Mapped[str] = mapped_column(Text)
    traceback: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    first_failed_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    last_failed_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    requeued_at: Mapped[datetime | None] = mapped_column(Timestamp)
