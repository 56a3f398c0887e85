"""Links between notes (Zettelkasten edges)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import LINK_CREATORS, LINK_KINDS, Timestamp, Uuid, check_in, new_id, utcnow


class Link(Base):
    __tablename__ = "links"
    __table_args__ = (
        CheckConstraint(check_in("kind", LINK_KINDS), name="kind"),
        CheckConstraint(check_in("created_by", LINK_CREATORS), name="created_by"),
        CheckConstraint("source_id <> target_id", name="not_self"),
        UniqueConstraint("source_id", "target_id", "kind", name="uq_links_edge"),
        Index("ix_links_target", "target_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    source_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("notes.id", ondelete="CASCADE"))
    target_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("notes.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16), default="related")
    weight: Mapped[float] = mapped_column(Float, default=0.0)
    created_by: Mapped[str] = mapped_column(String(16), default="pipeline")
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
