"""Sparse vectors for searchable notes that have none: written before migration 0011, or
while the model files were missing or the encoder switched off (`sparse.enabled`).

Invariants: only current, searchable notes (active or archived, valid_to IS NULL) with an
embedding are filled (a pending note gets its vector in the embed stage); each batch is
claimed FOR UPDATE SKIP LOCKED in id order and written in the same transaction, so a
committed batch is never redone, concurrent runs split the work, and an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session

from memory.clients.sparse_encoder import SparseEncoder, sparse_text
from memory.notes.embed import sparse_source
from memory.notes.models import Note
from memory.notes.writes import note_update


@dataclass(frozen=True)
class SparseFill:
    """One batch: how many notes were filled, and the last id looked at (None: no more)."""

    filled: int
    last_id: uuid.UUID | None


def _missing(tenant_id: str | None) -> ColumnElement[bool]:
    clause = and_(
        Note.sparse_embedding.is_(None),
        Note.embedding.is_not(None),
        Note.status.in_(("active", "archived")),
        Note.valid_to.is_(None),
    )
    return and_(clause, Note.tenant_id == tenant_id) if tenant_id else clause


def count_missing_sparse(*, session: Session, tenant_id: str | None = None) -> int:
    query = select(func.count()).select_from(Note).where(_missing(tenant_id))
    return int(session.scalar(query) or 0)


def fill_sparse_vectors(
    *,
    session: Session,
    encoder: SparseEncoder,
    limit: int,
    after_id: uuid.UUID | None = None,
    tenant_id: str | None = None,
) -> SparseFill:
    """Encode up to `limit` notes without a sparse vector whose id follows `after_id`."""
    columns = (Note.id, Note.content, Note.speaker, Note.updated_at)
    query = select(*columns).where(_missing(tenant_id))
    if after_id is not None:
        query = query.where(Note.id > after_id)
    rows = session.execute(
        query.order_by(Note.id).limit(limit).with_for_update(skip_locked=True)
    ).all()
    if not rows:
        return SparseFill(0, None)
    values = [
        {
            "note_id": row.id,
            "sparse_embedding": sparse_text(
                encoder.encode(sparse_source(row.speaker, row.content))
            ),
            # A derived column, not an edit: the note keeps its updated_at (the time of its
            # last change for sync and export).
            "updated_at": row.updated_at,
        }
        for row in rows
    ]
    note_update(("sparse_embedding", "updated_at")).run_many(session, values)
    return SparseFill(len(rows), rows[-1].id)
