"""Stage 3 of the write path: embed pending notes in batches, across episodes.

Invariants: notes to embed are claimed with FOR UPDATE SKIP LOCKED, so concurrent
workers split a backlog instead of embedding it twice; each note's text is embedded once
(its window vector is derived from its own and its neighbours' vectors when it is
decided, memory.notes.window; its terms when it becomes active, memory.notes.lexicon);
with a sparse encoder, the note's sparse vector ("Speaker: content", `sparse_source`) is
stored in the same update;
a note embedded long ago whose decision never came is handed to the decide stage again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from pgvector import SparseVector
from sqlalchemy import Integer, bindparam, select
from sqlalchemy.orm import Session

from memory.clients.embedder import Embedder
from memory.clients.sparse_encoder import SparseEncoder, sparse_text
from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.vectors import VectorParam
from memory.notes.writes import note_update
from memory.types import SPARSE_DIMENSION, Timestamp, utcnow


@dataclass(frozen=True)
class EmbedBatch:
    """What one embedding run did: notes it embedded, and pending notes embedded long ago
    whose decision never came (a lost decide task), handed to the decide stage again."""

    embedded: list[uuid.UUID]
    stale: list[uuid.UUID]

    @property
    def note_ids(self) -> list[uuid.UUID]:
        return [*self.embedded, *self.stale]


def embed_pending_notes(
    *,
    session: Session,
    embedder: Embedder,
    limit: int,
    stale_after_seconds: float = 60,
    sparse_encoder: SparseEncoder | None = None,
) -> EmbedBatch:
    """Embed up to `limit` pending, not yet embedded notes in one batch, one text per note
    (`embed_text`), and its sparse vector (`sparse_source`) when `sparse_encoder` is
    given; window vectors are left to the decide stage.

    Only notes without an embedding are locked: embedded ones awaiting their decision are
    never held while the model runs (their decide stage would wait on them). Those pending
    for longer than `stale_after_seconds` since they were embedded are returned as stale.
    """
    todo = _claim_statement().rows(session, {"claim_limit": limit})
    now = utcnow()
    if todo:
        vectors = embedder.embed([n.embed_text or n.content for n in todo])
        note_update(EMBEDDED_COLUMNS).run_many(
            session,
            [
                _embedded_values(note, vector, sparse_encoder, embedder.model_id, now)
                for note, vector in zip(todo, vectors, strict=True)
            ],
        )
    stale = _stale_statement().rows(
        session,
        {"stale_before": now - timedelta(seconds=stale_after_seconds), "stale_limit": limit},
    )
    return EmbedBatch([n.id for n in todo], [n.id for n in stale])


# No indexed column: the row can be updated in place (HOT) when its page has room.
EMBEDDED_COLUMNS = ("embedding", "embedding_model", "sparse_embedding", "updated_at")


def note_sparse_vector(
    encoder: SparseEncoder | None, speaker: str | None, content: str
) -> SparseVector | None:
    """A note's sparse vector for an ORM row (consolidated knowledge, an edited note's new
    version), or None without an encoder (the backfill fills it later)."""
    if encoder is None:
        return None
    return SparseVector(encoder.encode(sparse_source(speaker, content)), SPARSE_DIMENSION)


def sparse_source(speaker: str | None, content: str) -> str:
    """The text a note's sparse vector encodes: "Speaker: content", without the date that
    `embed_text` ends with (on LoCoMo's candidates the date cost the channel .002 R@10
    overall and .011 open-domain; commit 3e808f7)."""
    return f"{speaker}: {content}" if speaker else content


def _embedded_values(
    note: Any, vector: Any, sparse: SparseEncoder | None, model_id: str, now: datetime
) -> dict[str, Any]:
    return {
        "note_id": note.id,
        "embedding": VectorParam(vector),
        "embedding_model": model_id,
        "sparse_embedding": (
            None
            if sparse is None
            else sparse_text(sparse.encode(sparse_source(note.speaker, note.content)))
        ),
        "updated_at": now,
    }


@cache
def _claim_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id, Note.content, Note.embed_text, Note.speaker)
        .where(Note.status == "pending", Note.embedding.is_(None))
        .order_by(Note.created_at)
        .limit(bindparam("claim_limit", type_=Integer))
        .with_for_update(skip_locked=True)
    )


@cache
def _stale_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id)
        .where(
            Note.status == "pending",
            Note.embedding.is_not(None),
            Note.updated_at < bindparam("stale_before", type_=Timestamp),
        )
        .order_by(Note.created_at)
        .limit(bindparam("stale_limit", type_=Integer))
    )
