"""Links between notes (Zettelkasten edges)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String, Text, UniqueConstraint
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


class Contribution(Base):
    """What evolution copied from one note into another: a keyword, a tag, or (field
    `context`, value empty) the context line an LLM rewrote in light of the source.

    Invariants: a row exists exactly while its value, copied from `source_id`, is in the
    target's keywords or tags (or the target's context is the rewritten one); a value the
    target already held is never recorded, so withdrawing a source's rows removes only
    what it added (memory.links.evolution); both notes belong to the row's tenant and
    user, and the source may flow into the target (memory.access.audience).
    """

    __tablename__ = "note_contributions"
    __table_args__ = (
        CheckConstraint("field IN ('keyword', 'tag', 'context')", name="field"),
        Index("ix_note_contributions_source", "source_id"),
    )

    target_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    )
    field: Mapped[str] = mapped_column(String(8), primary_key=True)
    value: Mapped[str] = mapped_column(Text, primary_key=True)
    source_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
