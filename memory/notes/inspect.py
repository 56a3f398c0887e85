"""What a person inspecting one note needs beyond the note: its activation over time, the
episodes it came from and the audit trail of its lineage.

Invariants: every function starts from a note the caller already obtained through a
Viewer (get_visible_note / note_history), so nothing here widens access; the activation
curve uses the same ACT-R base level as the read path (memory.activation.model).
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.activation.model import base_level, retention
from memory.config import Settings
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.ops.models import AuditEvent

CURVE_POINTS = 48


def _base_level_at(note: Note, at: datetime, decay: float) -> float | None:
    """B as it was at `at`, from the accesses stored up to then (None if unknown or -inf)."""
    stored = sorted(note.access_times or [])
    seen = [t for t in stored if t <= at]
    missing = max(note.access_count - len(stored), 0)
    if not seen or (missing and at < stored[0]):
        return None
    value = base_level(
        seen, at, decay=decay, total_count=missing + len(seen), first_access=note.first_access_at
    )
    return round(value, 4) if math.isfinite(value) else None


def activation_profile(note: Note, settings: Settings, now: datetime) -> dict[str, Any]:
    """Access history, B and R now, and B sampled from the first access to now."""
    decay = settings.activation.decay_parameter
    start = min(note.first_access_at, now)
    step = max((now - start) / (CURVE_POINTS - 1), timedelta(seconds=1))
    curve = []
    for i in range(CURVE_POINTS):
        at = min(start + step * i, now)
        curve.append({"at": at.isoformat(), "base_level": _base_level_at(note, at, decay)})
        if at >= now:
            break
    return {
        "note_id": str(note.id),
        "access_count": note.access_count,
        "access_times": [t.isoformat() for t in sorted(note.access_times or [])],
        "first_access_at": note.first_access_at.isoformat(),
        "last_access_at": note.last_access_at.isoformat(),
        "half_life_hours": round(note.half_life_hours, 2),
        "base_level": _base_level_at(note, now, decay),
        "retention": round(retention(note.last_access_at, now, note.half_life_hours), 4),
        "thresholds": {
            "retrieval": settings.activation.retrieval_threshold,
            "prune": settings.decay.prune_threshold,
            "hard_prune": settings.decay.hard_prune_threshold,
        },
        "curve": curve,
    }


def provenance_episodes(*, session: Session, note_ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The raw episodes the notes were built from, oldest first, each once."""
    rows = session.execute(
        select(Episode, NoteSource.note_id, NoteSource.relation)
        .join(NoteSource, NoteSource.episode_id == Episode.id)
        .where(NoteSource.note_id.in_(note_ids))
        .order_by(Episode.occurred_at, Episode.seq)
    )
    out: dict[uuid.UUID, dict[str, Any]] = {}
    for episode, note_id, relation in rows:
        entry = out.setdefault(
            episode.id,
            {
                "episode_id": str(episode.id),
                "agent_id": episode.agent_id,
                "session_id": episode.session_id,
                "role": episode.role,
                "speaker": episode.speaker,
                "content": episode.content,
                "occurred_at": episode.occurred_at.isoformat(),
                "status": episode.status,
                "decision": episode.decision,
                "source": episode.source,
                "notes": [],
            },
        )
        entry["notes"].append({"note_id": str(note_id), "relation": relation})
    return list(out.values())


def lineage_events(
    *, session: Session, tenant_id: str, user_id: str, note_ids: list[uuid.UUID], limit: int = 200
) -> list[dict[str, Any]]:
    """Audit events about these notes (the versions of one lineage), oldest first."""
    rows = session.scalars(
        select(AuditEvent)
        .where(
            AuditEvent.tenant_id == tenant_id,
            AuditEvent.user_id == user_id,
            AuditEvent.entity_type == "note",
            AuditEvent.entity_id.in_([str(i) for i in note_ids]),
        )
        .order_by(AuditEvent.id)
        .limit(limit)
    )
    return [
        {
            "id": e.id,
            "at": e.created_at.isoformat(),
            "actor": e.actor,
            "action": e.action,
            "note_id": e.entity_id,
            "reason": e.reason,
            "data": e.data,
        }
        for e in rows
    ]
