"""Stage 3 of the write path: embed pending notes in batches, across episodes.

Invariants: notes to embed are claimed with FOR UPDATE SKIP LOCKED, so concurrent
workers split a backlog instead of embedding it twice; each note's text is embedded once
(its window vector is derived from its own and its neighbours' vectors when it is
decided, memory.notes.window; its terms when it becomes active, memory.notes.lexicon);
a note embedded long ago whose decision never came is handed to the decide stage again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import Integer, bindparam, select
from sqlalchemy.orm import Session

from memory.clients.embedder import Embedder
from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.vectors import VectorParam
from memory.notes.writes import note_update
from memory.types import Timestamp, utcnow


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
    *, session: Session, embedder: Embedder, limit: int, stale_after_seconds: float = 60
) -> EmbedBatch:
    """Embed up to `limit` pending, not yet embedded notes in one batch, one text per note
    (`embed_text`); window vectors are left to the decide stage.

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
                _embedded_values(note, vector, embedder.model_id, now)
                for note, vector in zip(todo, vectors, strict=True)
            ],
        )
    stale = _stale_statement().rows(
        session,
        {"stale_before": now - timedelta(seconds=stale_after_seconds), "stale_limit": limit},
    )
    return EmbedBatch([n.id for n in todo], [n.id for n in stale])


# No indexed column: the row can be updated in place (HOT) when its page has room.
EMBEDDED_COLUMNS = ("embedding", "embedding_model", "updated_at")


def _embedded_values(note: Any, vector: Any, model_id: str, now: datetime) -> dict[str, Any]:
    return {
        "note_id": note.id,
        "embedding": VectorParam(vector),
        "embedding_model": model_id,
        "updated_at": now,
    }


@cache
def _claim_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id, Note.content, Note.embed_text)
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
