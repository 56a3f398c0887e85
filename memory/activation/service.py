"""Recording that notes were used: access history and half-life growth (off the hot path)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.activation.model import grow_half_life, record_access
from memory.config import ActivationSettings
from memory.notes.models import Note


def record_note_accesses(
    *, session: Session, note_ids: Sequence[uuid.UUID], at: datetime, settings: ActivationSettings
) -> int:
    """Append one access to each note and grow its half-life; rows locked in id order."""
    return record_access_batch(
        session=session, accesses={i: [at] for i in note_ids}, settings=settings
    )


def record_access_batch(
    *,
    session: Session,
    accesses: Mapping[uuid.UUID, Sequence[datetime]],
    settings: ActivationSettings,
) -> int:
    """Append each note's accesses in time order, growing its half-life once per access;
    rows locked in id order (two batches never wait on each other in a cycle). Returns
    the notes updated (a note deleted meanwhile is skipped)."""
    notes = session.scalars(
        select(Note).where(Note.id.in_(sorted(accesses))).order_by(Note.id).with_for_update()
    )
    count = 0
    for note in notes:
        for at in sorted(accesses[note.id]):
            times, total, first = record_access(
                list(note.access_times or []), note.access_count, note.first_access_at, at
            )
            note.access_times, note.access_count, note.first_access_at = times, total, first
            note.last_access_at = max(note.last_access_at, at)
            note.half_life_hours = grow_half_life(
                note.half_life_hours,
                growth=settings.half_life_growth,
                kind=note.kind,
                multipliers=settings.kind_half_life_multipliers,
            )
        count += 1
    session.flush()
    return count
