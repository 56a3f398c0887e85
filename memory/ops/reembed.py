"""Re-embedding notes after the embedding model changed, in resumable batches.

Invariants: a note is stale when its embedding_model differs from the embedder's
model_id (or it has none) and it is not pending (the pipeline embeds those); each batch
is claimed FOR UPDATE SKIP LOCKED and written with the new model id, so a batch committed
is never redone and an interrupted run resumes where it stopped; vectors of another
dimension than the column's are refused before anything is written.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session

from memory.clients.embedder import MINILM_MODEL_IDS, Embedder
from memory.errors import ConfigError
from memory.notes.models import Note
from memory.notes.window import lock_note_windows, refresh_windows
from memory.types import EMBEDDING_DIMENSION


def _stale(model_id: str, tenant_id: str | None) -> ColumnElement[bool]:
    clause = and_(Note.status != "pending", Note.embedding_model.is_distinct_from(model_id))
    return and_(clause, Note.tenant_id == tenant_id) if tenant_id else clause


def count_stale(*, session: Session, model_id: str, tenant_id: str | None = None) -> int:
    query = select(func.count()).select_from(Note).where(_stale(model_id, tenant_id))
    return int(session.scalar(query) or 0)


def same_space(model_id: str) -> frozenset[str]:
    """The model ids whose vectors may be compared with `model_id`'s: all-MiniLM-L6-v2's
    int8 and float runs (cosine ~0.99 to each other), else the model alone."""
    return frozenset(MINILM_MODEL_IDS) if model_id in MINILM_MODEL_IDS else frozenset({model_id})


def count_foreign_space(*, session: Session, model_id: str, tenant_id: str | None = None) -> int:
    """Searchable notes whose vectors no query of `model_id` may be compared with: until
    `muma reembed` has run, the dense routes rank them by meaningless cosines."""
    foreign = and_(
        Note.status != "pending",
        Note.embedding_model.is_not(None),
        Note.embedding_model.not_in(sorted(same_space(model_id))),
    )
    if tenant_id:
        foreign = and_(foreign, Note.tenant_id == tenant_id)
    return int(session.scalar(select(func.count()).select_from(Note).where(foreign)) or 0)


def reembed_batch(
    *, session: Session, embedder: Embedder, limit: int, tenant_id: str | None = None
) -> int:
    """Re-embed up to `limit` stale notes (own text; windows derived); return how many."""
    if embedder.dimension != EMBEDDING_DIMENSION:
        raise ConfigError(
            f"embedder {embedder.model_id} makes {embedder.dimension}-d vectors; the store "
            f"holds {EMBEDDING_DIMENSION}-d ones",
            key="embedding.dimension",
        )
    stale = _stale(embedder.model_id, tenant_id)
    candidates = list(session.scalars(select(Note.id).where(stale).order_by(Note.id).limit(limit)))
    # Window session locks before row locks, as the decide stage takes them.
    seeds = lock_note_windows(session=session, note_ids=candidates)
    notes = list(
        session.scalars(
            select(Note)
            .where(Note.id.in_(candidates), stale)
            .order_by(Note.id)
            .with_for_update(skip_locked=True)
        )
    )
    if not notes:
        return 0
    vectors = embedder.embed([n.embed_text or n.content for n in notes])
    for note, vector in zip(notes, vectors, strict=True):
        note.embedding = vector
        note.embedding_model = embedder.model_id
    session.flush()
    refresh_windows(session=session, seeds=seeds)
    return len(notes)
