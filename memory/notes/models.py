"""Notes (the memories), their provenance and per-user lexical statistics.

A note row is one version: an update closes it (valid_to, superseded_by) and inserts a
new row with the same lineage_id, so history is never overwritten.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import SPARSEVEC
from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from memory.db import Base
from memory.notes.vectors import BinaryVector
from memory.types import (
    DERIVED_VERSION,
    EMBEDDING_DIMENSION,
    NOTE_KINDS,
    NOTE_STATUSES,
    SPARSE_DIMENSION,
    VISIBILITIES,
    Timestamp,
    Uuid,
    check_in,
    new_id,
    utcnow,
)


class Note(Base):
    __tablename__ = "notes"
    __table_args__ = (
        CheckConstraint(check_in("kind", NOTE_KINDS), name="kind"),
        CheckConstraint(check_in("visibility", VISIBILITIES), name="visibility"),
        CheckConstraint(check_in("status", NOTE_STATUSES), name="status"),
        CheckConstraint("importance >= 0 AND importance <= 1", name="importance"),
        CheckConstraint("trust IN ('high', 'medium', 'low')", name="trust"),
        CheckConstraint("review IN ('candidate')", name="review"),
        Index(
            "ix_notes_candidates",
            "tenant_id",
            "user_id",
            postgresql_where=text("review IS NOT NULL"),
        ),
        Index("ix_notes_scope", "tenant_id", "user_id", "status"),
        Index("ix_notes_lineage", "lineage_id", "version"),
        Index("ix_notes_session_turn", "tenant_id", "user_id", "session_id", "turn_seq"),
        # Own terms keyed per user (`memory.notes.lexicon.user_terms_match`, 0005), for the
        # commons; the BM25 routes read their mirror `note_terms` (0009).
        Index(
            "ix_notes_user_index_terms",
            text("note_user_lexemes(tenant_id, user_id, index_terms)"),
            postgresql_using="gin",
        ),
        # The embedding stage claims pending notes oldest first (write path).
        Index("ix_notes_pending", "created_at", postgresql_where=text("status = 'pending'")),
        # Hard deletes set superseded_by NULL on the notes a deleted note superseded.
        Index(
            "ix_notes_superseded_by",
            "superseded_by",
            postgresql_where=text("superseded_by IS NOT NULL"),
        ),
        Index(
            "ix_notes_content_trgm",
            "content",
            postgresql_using="gin",
            postgresql_ops={"content": "gin_trgm_ops"},
        ),
        Index("ix_notes_expires", "expires_at", postgresql_where=text("expires_at IS NOT NULL")),
        # Free space on each page lets updates of unindexed columns (window vectors,
        # keywords, access history) be HOT: no index entry is written (migration 0003).
        {"postgresql_with": {"fillfactor": 80}},
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    lineage_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    version: Mapped[int] = mapped_column(Integer, default=1)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    agent_id: Mapped[str] = mapped_column(String(128))
    session_id: Mapped[str | None] = mapped_column(String(128))
    # The source episode's capture order: adjacent turns of a session for the read path.
    turn_seq: Mapped[int | None] = mapped_column(BigInteger)
    speaker: Mapped[str | None] = mapped_column(String(128))
    # Where it came from and how far that is trusted (memory.trust; migration 0014).
    origin: Mapped[str] = mapped_column(String(16), default="user", server_default="user")
    origin_ref: Mapped[str | None] = mapped_column(String(512))
    trust: Mapped[str] = mapped_column(String(8), default="high", server_default="high")
    # Its text addresses the assistant or claims a standing order (memory.trust.instructions).
    instruction_like: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    # 'candidate' while it waits for review: not injected until approved.
    review: Mapped[str | None] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    summary: Mapped[str | None] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(Text)
    keywords: Mapped[list[str]] = mapped_column(ARRAY(Text), default=list)
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), default=list)
    kind: Mapped[str] = mapped_column(String(16), default="episodic")
    domain: Mapped[str] = mapped_column(String(64), default="general")
    visibility: Mapped[str] = mapped_column(String(16), default="scoped")
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="active")
    importance: Mapped[float] = mapped_column(Float, default=0.5)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    occurred_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow, onupdate=utcnow)
    valid_from: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    valid_to: Mapped[datetime | None] = mapped_column(Timestamp)
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("notes.id", ondelete="SET NULL")
    )
    expires_at: Mapped[datetime | None] = mapped_column(Timestamp)
    archived_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # ACT-R access history: the last 50 access times, the total count and the first access.
    access_times: Mapped[list[datetime]] = mapped_column(ARRAY(Timestamp), default=list)
    access_count: Mapped[int] = mapped_column(Integer, default=1)
    first_access_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    last_access_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
    half_life_hours: Mapped[float] = mapped_column(Float, default=168.0)
    # What the read path indexes, computed once at write time.
    index_text: Mapped[str | None] = mapped_column(Text)
    window_text: Mapped[str | None] = mapped_column(Text)
    # Who may rank by the windows (text and vector): None any reader of the note, else
    # these agents (memory.access.audience.window_readers; mirrored for the read path).
    window_readers: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    embed_text: Mapped[str | None] = mapped_column(Text)
    # Scored through their mirror `note_terms` (kept by a trigger, migration 0009).
    index_terms: Mapped[Any | None] = mapped_column(TSVECTOR)
    window_terms: Mapped[Any | None] = mapped_column(TSVECTOR)
    term_count: Mapped[int] = mapped_column(Integer, default=0)
    window_term_count: Mapped[int] = mapped_column(Integer, default=0)
    # Searched through its mirror `note_vectors` (kept by a trigger, migration 0004).
    embedding: Mapped[Any | None] = mapped_column(BinaryVector(EMBEDDING_DIMENSION))
    # Scored through its mirror `note_window_vectors` (kept by a trigger, migration 0008).
    window_embedding: Mapped[Any | None] = mapped_column(BinaryVector(EMBEDDING_DIMENSION))
    embedding_model: Mapped[str | None] = mapped_column(String(128))
    # SPLADE-tiny's weights over WordPiece terms, scored for the read path's candidates in
    # the statement that reads their rows (migration 0011; no index).
    sparse_embedding: Mapped[Any | None] = mapped_column(SPARSEVEC(SPARSE_DIMENSION))
    # The rule its derived fields (windows, evolved keywords, tags, context) were built
    # under: below DERIVED_VERSION they are rebuilt (memory.notes.rederive, 0012).
    # (A server default only: the write path's compiled INSERTs name their columns.)
    derived_version: Mapped[int] = mapped_column(SmallInteger, server_default=str(DERIVED_VERSION))


class NoteVector(Base):
    """The vectors of the searchable notes, in a narrow table for nearest-neighbour search.

    Invariants: maintained only by the trigger of migrations 0004, 0006 and 0010 (never
    written by application code): one row per note with a vector that is active or
    archived and current (valid_to IS NULL), same tenant, user, id, kind, domain,
    occurred_at and expires_at, `active` = status is 'active'.
    Hash-partitioned by (tenant_id, user_id) into `note_vectors_p00`..`p63`, each with its
    own HNSW graph and btrees on the filter columns (0007); a query pruned to one
    partition needs equality on both columns.
    Vectors are stored inline (STORAGE PLAIN).
    """

    __tablename__ = "note_vectors"
    __table_args__ = (
        Index(
            "ix_note_vectors_embedding_hnsw",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        # A filtered search reads a small slice through these and ranks it exactly (0007).
        Index("ix_note_vectors_scope_kind", "tenant_id", "user_id", "kind"),
        Index("ix_note_vectors_scope_domain", "tenant_id", "user_id", "domain"),
        Index("ix_note_vectors_scope_occurred", "tenant_id", "user_id", "occurred_at"),
        {"postgresql_partition_by": "HASH (tenant_id, user_id)"},
    )

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    note_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    active: Mapped[bool] = mapped_column(Boolean)
    embedding: Mapped[Any] = mapped_column(BinaryVector(EMBEDDING_DIMENSION))
    # The notes' columns the search filters test (0006), so a filtered graph scan rejects
    # an entry from this row instead of joining it to notes first.
    kind: Mapped[str] = mapped_column(String(16))
    domain: Mapped[str] = mapped_column(String(64))
    occurred_at: Mapped[datetime] = mapped_column(Timestamp)
    # Notes past their TTL wait for the decay sweep as `active`; the graph scan passes
    # over them here instead of filling the pool the access rules then empty (0010).
    expires_at: Mapped[datetime | None] = mapped_column(Timestamp)


class NoteWindowVector(Base):
    """The window vectors of the searchable notes, inline, for scoring candidates by id.

    Invariants: maintained only by the trigger of migration 0008 (never written by
    application code): one row per note with a window vector that is active or archived
    and current, same tenant, user and id. Hash-partitioned by (tenant_id, user_id) like
    `note_vectors`; a read names both to be pruned to one partition. No graph: window
    vectors are never searched, only scored for candidates other routes found.
    """

    __tablename__ = "note_window_vectors"
    __table_args__ = ({"postgresql_partition_by": "HASH (tenant_id, user_id)"},)

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    note_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    window_embedding: Mapped[Any] = mapped_column(BinaryVector(EMBEDDING_DIMENSION))
    window_readers: Mapped[list[str] | None] = mapped_column(ARRAY(Text))


class NoteTerms(Base):
    """What the lexical routes read of the searchable notes, in a narrow table: the BM25
    inputs and the columns of the access rules and search filters.

    Invariants: maintained only by the trigger of migration 0009 (never written by
    application code): one row per note that is active or archived and current, with the
    same tenant, user, id and values of every column here. Hash-partitioned by
    (tenant_id, user_id) like `note_vectors`, with the per-user term indexes of 0005; a
    read names both to be pruned to one partition. The attribute names are the notes'
    (`memory.retrieval.scope.scope_conditions` reads either table).
    """

    __tablename__ = "note_terms"
    __table_args__ = (
        Index(
            "ix_note_terms_user_index_terms",
            text("note_user_lexemes(tenant_id, user_id, index_terms)"),
            postgresql_using="gin",
        ),
        Index(
            "ix_note_terms_user_window_terms",
            text("note_user_lexemes(tenant_id, user_id, window_terms)"),
            postgresql_using="gin",
        ),
        {"postgresql_partition_by": "HASH (tenant_id, user_id)"},
    )

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    note_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128))
    visibility: Mapped[str] = mapped_column(String(16))
    domain: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    occurred_at: Mapped[datetime] = mapped_column(Timestamp)
    expires_at: Mapped[datetime | None] = mapped_column(Timestamp)
    valid_to: Mapped[datetime | None] = mapped_column(Timestamp)
    index_terms: Mapped[Any | None] = mapped_column(TSVECTOR)
    term_count: Mapped[int] = mapped_column(Integer)
    window_terms: Mapped[Any | None] = mapped_column(TSVECTOR)
    window_term_count: Mapped[int] = mapped_column(Integer)
    window_readers: Mapped[list[str] | None] = mapped_column(ARRAY(Text))


class NoteSource(Base):
    """Provenance: which episodes a note came from."""

    __tablename__ = "note_sources"
    __table_args__ = (Index("ix_note_sources_episode", "episode_id"),)

    note_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    )
    episode_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("episodes.id", ondelete="CASCADE"), primary_key=True
    )
    relation: Mapped[str] = mapped_column(String(16), default="extracted")
    created_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)


class LexiconTerm(Base):
    """Per-user document frequency of an analysed term among active notes (for BM25)."""

    __tablename__ = "lexicon"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    field: Mapped[str] = mapped_column(String(8), primary_key=True)
    term: Mapped[str] = mapped_column(Text, primary_key=True)
    doc_count: Mapped[int] = mapped_column(Integer, default=0)


class LexiconTotal(Base):
    """Per-user number of active notes and total analysed length per field (for BM25)."""

    __tablename__ = "lexicon_totals"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    field: Mapped[str] = mapped_column(String(8), primary_key=True)
    doc_count: Mapped[int] = mapped_column(Integer, default=0)
    term_total: Mapped[int] = mapped_column(BigInteger, default=0)


class Tombstone(Base):
    """What remains of an erased note: its id, who erased it, when and why; no content
    (and no hash of it: migration 0013)."""

    __tablename__ = "tombstones"
    __table_args__ = (Index("ix_tombstones_scope", "tenant_id", "user_id"),)

    note_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(String(128))
    reason: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    actor: Mapped[str | None] = mapped_column(String(160))
    deleted_at: Mapped[datetime] = mapped_column(Timestamp, default=utcnow)
