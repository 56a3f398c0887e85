"""One read of a user's active notes and their vectors, shared by the sleep-cycle stages.

Invariants: the snapshot holds the user's active, current notes that have an embedding,
in id order (so every stage sees them in a deterministic order), with their vectors
normalised to unit length; vectors travel in pgvector's binary format (`vector_send`),
because parsing 100k text vectors costs more than clustering them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memory.consolidation.knowledge import SourceNote
from memory.consolidation.pipeline import unit_rows
from memory.notes.models import Note

# vector_send: int16 dimension, int16 unused, then big-endian float32 values.
HEADER_BYTES = 4


@dataclass(frozen=True)
class Snapshot:
    notes: list[SourceNote]
    vectors: np.ndarray  # unit rows aligned with notes
    _by_lineage: dict[uuid.UUID, int] = field(default_factory=dict, compare=False, repr=False)

    def where(self, keep: list[bool]) -> Snapshot:
        index = np.flatnonzero(np.asarray(keep, dtype=bool))
        return Snapshot([self.notes[i] for i in index], self.vectors[index])

    def lineage_index(self) -> dict[uuid.UUID, int]:
        """Lineage → row of its (current) note; built on first use."""
        if not self._by_lineage and self.notes:
            self._by_lineage.update((n.lineage_id, i) for i, n in enumerate(self.notes))
        return self._by_lineage


def decode_vectors(blobs: list[bytes]) -> np.ndarray:
    """Rows of pgvector binary values (all of one dimension) as a float32 matrix."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    dimension = int.from_bytes(blobs[0][:2], "big")
    data = b"".join(bytes(b[HEADER_BYTES:]) for b in blobs)
    return np.frombuffer(data, dtype=">f4").astype(np.float32).reshape(len(blobs), dimension)


def load_snapshot(session: Session, *, tenant_id: str, user_id: str) -> Snapshot:
    rows = session.execute(
        select(
            Note.id,
            Note.lineage_id,
            Note.agent_id,
            Note.visibility,
            Note.domain,
            Note.content,
            Note.tags,
            Note.importance,
            Note.occurred_at,
            Note.embedding_model,
            Note.speaker,
            Note.kind,
            Note.updated_at,
            Note.trust,
            func.vector_send(Note.embedding).label("vector"),
        )
        .where(
            Note.tenant_id == tenant_id,
            Note.user_id == user_id,
            Note.status == "active",
            Note.valid_to.is_(None),
            Note.embedding.is_not(None),
            # Untrusted text and unreviewed candidates never become knowledge (memory.trust).
            Note.trust != "low",
            Note.review.is_(None),
        )
        .order_by(Note.id)
    ).all()
    notes = [SourceNote(*row[:14]) for row in rows]
    vectors = decode_vectors([row.vector for row in rows])
    return Snapshot(notes, unit_rows(vectors) if len(rows) else vectors)
