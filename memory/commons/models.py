"""L3 knowledge commons: the transactive index ("which agent knows about X")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import Timestamp, utcnow


class TransactiveEntry(Base):
    __tablename__ = "transactive_index"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    topic: Mapped[str] = mapped_column(String(128), primary_key=True)
    domain: Mapped[str] = mapped_column(String(64), default="general")
    visibility: Mapped[str] = mapped_column(String(16), default="scoped")
    note_count: Mapped[int] = mapped_column(Integer, default=0)
    last_write_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
