"""The record of each user or tenant erasure (migration 0013)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Index, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import Timestamp, Uuid, new_id, utcnow

ERASURE_STATUSES = ("running", "done")


class Erasure(Base):
    """One erasure of a user (`user_id`) or of a whole tenant (`user_id` NULL).

    Invariants: while a row is `running`, no capture for its user (or tenant) is stored;
    `progress` holds the rows removed so far per table, `report` the final counts and
    the verification that none is left; the row itself holds no memory's content.
    """

    __tablename__ = "erasures"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'done')", name="status"),
        Index(
            "ix_erasures_running",
            "tenant_id",
            "user_id",
            postgresql_where=text("status = 'running'"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str | None] = mapped_column(String(128))
    requested_by: Mapped[str] = mapped_column(String(160))
    reason: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="running")
    progress: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    started_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
