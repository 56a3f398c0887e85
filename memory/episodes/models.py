"""Episodes: immutable raw captured events, the durable record of every turn."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Identity, Index, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import EPISODE_STATUSES, ROLES, Timestamp, Uuid, check_in, new_id, utcnow


class Episode(Base):
    __tablename__ = "episodes"
    __table_args__ = (
        CheckConstraint(check_in("role", ROLES), name="role"),
        CheckConstraint(check_in("status", EPISODE_STATUSES), name="status"),
        Index("uq_episodes_tenant_idempotency", "tenant_id", "idempotency_key", unique=True),
        Index("ix_episodes_user_session_seq", "tenant_id", "user_id", "session_id", "seq"),
        Index("ix_episodes_status_updated", "status", "updated_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    seq: Mapped[int] = mapped_column(BigInteger, Identity(always=False), unique=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    agent_id: Mapped[str] = mapped_column(String(128))
    session_id: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    speaker: Mapped[str | None] = mapped_column(String(128))
    content: Mapped[str] = mapped_column(Text)
    occurred_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    # Caller-supplied note options for explicit memories (kind, domain, visibility, ...).
    options: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    source: Mapped[str] = mapped_column(String(16), default="capture")
    # Who put the turn into the conversation, and the tool's URL, path or the participant's
    # name where known (memory.trust.origin; migration 0014).
    origin: Mapped[str] = mapped_column(String(16), default="user", server_default="user")
    origin_ref: Mapped[str | None] = mapped_column(String(512))
    idempotency_key: Mapped[str | None] = mapped_column(String(256))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    decision: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow, onupdate=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(Timestamp)
    processed_at: Mapped[datetime | None] = mapped_column(Timestamp)
