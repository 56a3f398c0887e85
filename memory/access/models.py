"""Agents and API tokens: who may call MUMA and what each agent may see."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ARRAY, Boolean, CheckConstraint, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import TOKEN_ROLES, Timestamp, Uuid, check_in, new_id, utcnow


class Agent(Base):
    __tablename__ = "agents"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    display_name: Mapped[str | None] = mapped_column(String(256))
    domains: Mapped[list[str]] = mapped_column(ARRAY(Text), default=list)
    can_see_private: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow, onupdate=utcnow)


class ApiToken(Base):
    """A bearer token, stored only as its sha256; the secret is shown once at creation."""

    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint(check_in("role", TOKEN_ROLES), name="role"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    tenant_id: Mapped[str] = mapped_column(String(128))
    # A user-level token acts for exactly this user (it may read user-only notes).
    user_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(Timestamp)
    last_used_at: Mapped[datetime | None] = mapped_column(Timestamp)
