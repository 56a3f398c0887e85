"""The journal's one table: the memories each /v1/context answer injected (migration 0015).

The capture side of the journal is not stored: it is read from episodes, provenance,
notes and the audit log (memory.journal.turns).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, Identity, Index, SmallInteger, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.types import Timestamp, Uuid, utcnow


class JournalInjection(Base):
    """One memory one /v1/context answer injected, at its rank, with its score and why.

    Invariants: ids, ranks, scores, route names and the note's origin and trust label
    only: never the prompt, never a memory's text; one row names one note, and the rows
    of one answer share `injection_id` and `at`; forgetting the note deletes the rows
    that name it (memory.erasure.forget); rows older than `journal.retention_days` are
    pruned (memory.journal.service.prune_injections).
    """

    __tablename__ = "journal_injections"
    __table_args__ = (
        Index("ix_journal_injections_scope", "tenant_id", "user_id", "at"),
        Index("ix_journal_injections_note", "note_id"),
        Index("ix_journal_injections_at", "at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    injection_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    # The agent the block was built for (None: a user-level read).
    agent_id: Mapped[str | None] = mapped_column(String(128))
    session_id: Mapped[str | None] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    note_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    rank: Mapped[int] = mapped_column(SmallInteger)  # 1 = first line of the block
    score: Mapped[float | None] = mapped_column(Float)
    # The hit's explanation: route ranks and numbers (memory.retrieval.hits).
    explanation: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    origin: Mapped[str] = mapped_column(String(16))
    trust: Mapped[str] = mapped_column(String(8))
    candidate: Mapped[bool] = mapped_column(Boolean, default=False)
