"""Helpers for the sleep-cycle tests: notes written straight into the store at a given time.

The write path is tested elsewhere; these tests need exact creation times, access
histories and embeddings, so they insert active, indexed notes directly.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from memory.activation.model import initial_half_life
from memory.config import Settings
from memory.db import session_scope
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms
from memory.notes.models import LexiconTotal, Note


def make_note(
    session: Session,
    *,
    tenant_id: str,
    user_id: str,
    content: str,
    created_at: datetime,
    settings: Settings,
    kind: str = "episodic",
    agent_id: str = "agent-1",
    pinned: bool = False,
    embedding: Sequence[float] | np.ndarray | None = None,
    **extra: Any,
) -> Note:
    """An active, current, indexed note created (and first accessed) at `created_at`."""
    note_id = uuid.uuid4()
    fields: dict[str, Any] = {
        "visibility": "open",
        "domain": "general",
        "speaker": None,
        "access_times": [created_at],
        "half_life_hours": initial_half_life(kind, settings.activation),
    }
    fields.update(extra)
    note = Note(
        id=note_id,
        lineage_id=fields.pop("lineage_id", note_id),
        version=fields.pop("version", 1),
        tenant_id=tenant_id,
        user_id=user_id,
        agent_id=agent_id,
        content=content,
        kind=kind,
        pinned=pinned,
        status="active",
        importance=0.5,
        occurred_at=created_at,
        created_at=created_at,
        valid_from=created_at,
        access_count=len(fields["access_times"]),
        first_access_at=min(fields["access_times"]),
        last_access_at=max(fields["access_times"]),
        index_text=content,
        embed_text=content,
        embedding=None if embedding is None else np.asarray(embedding, dtype=np.float32),
        window_embedding=None if embedding is None else np.asarray(embedding, dtype=np.float32),
        embedding_model="test" if embedding is not None else None,
        **fields,
    )
    apply_terms(note, note_terms(note))
    session.add(note)
    session.flush()
    index_note_terms(session=session, notes=[note])
    return note


def add_notes(
    tenant_id: str, user_id: str, settings: Settings, specs: Sequence[dict[str, Any]]
) -> list[uuid.UUID]:
    """Insert one note per spec (make_note keyword arguments) in one transaction."""
    with session_scope() as session:
        notes = [
            make_note(session, tenant_id=tenant_id, user_id=user_id, settings=settings, **spec)
            for spec in specs
        ]
        return [n.id for n in notes]


def indexed_count(tenant_id: str, user_id: str) -> int:
    """Notes counted in the user's BM25 statistics (field 'own')."""
    with session_scope() as session:
        total = session.scalar(
            select(LexiconTotal.doc_count).where(
                LexiconTotal.tenant_id == tenant_id,
                LexiconTotal.user_id == user_id,
                LexiconTotal.field == "own",
            )
        )
    return int(total or 0)


def active_current_count(tenant_id: str, user_id: str) -> int:
    with session_scope() as session:
        return int(
            session.scalar(
                select(func.count()).where(
                    Note.tenant_id == tenant_id,
                    Note.user_id == user_id,
                    Note.status == "active",
                    Note.valid_to.is_(None),
                )
            )
            or 0
        )
