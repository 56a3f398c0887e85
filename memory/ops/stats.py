"""Counts for one user's memory, as one viewer may see it (`muma stats`, GET /v1/stats).

Invariants: every note count goes through `visible_clause`, so an agent only counts what
it could read; "current" means active and not closed (valid_to IS NULL), the notes the
read path can return; closed versions are counted once, under status `closed`. The
tenant's dead-letter count (`dead_letters_tenant`) spans every user: it is left out unless
the caller reads tenant-wide (`tenant_wide`; a token bound to a user does not).
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.orm import Session, aliased

from memory.access.policy import Viewer, visible_clause
from memory.activation.model import base_level
from memory.config import Settings
from memory.conflicts.models import Conflict
from memory.episodes.models import Episode
from memory.links.models import Link
from memory.notes.models import Note
from memory.ops.dead_letters import count_dead_letters
from memory.types import EPISODE_STATUSES, utcnow

BREAKDOWNS = {
    "kind": Note.kind,
    "domain": Note.domain,
    "visibility": Note.visibility,
    "agent": Note.agent_id,
}


def _current(viewer: Viewer) -> ColumnElement[bool]:
    return and_(visible_clause(viewer), Note.status == "active", Note.valid_to.is_(None))


def _grouped(session: Session, column: Any, where: ColumnElement[bool]) -> dict[str, int]:
    rows = session.execute(
        select(column, func.count()).where(where).group_by(column).order_by(func.count().desc())
    )
    return {str(key): int(n) for key, n in rows}


def _by_status(session: Session, viewer: Viewer) -> dict[str, int]:
    # A closed version keeps status active/archived; report it as `closed`, not as active.
    label = case(
        (Note.status.in_(("deleted", "pending")), Note.status),
        (Note.valid_to.is_not(None), "closed"),
        else_=Note.status,
    )
    counts = {"active": 0, "archived": 0, "pending": 0, "deleted": 0, "closed": 0}
    counts.update(_grouped(session, label, visible_clause(viewer)))
    return counts


def activation_histogram(
    session: Session, viewer: Viewer, settings: Settings, now: datetime
) -> dict[str, Any]:
    """Base-level activation B of current notes, bucketed at the configured thresholds."""
    cfg = settings.activation
    edges = sorted(
        {
            settings.decay.hard_prune_threshold,
            settings.decay.prune_threshold,
            cfg.retrieval_threshold,
            2.0,
            4.0,
        }
    )
    rows = session.execute(
        select(Note.access_times, Note.access_count, Note.first_access_at).where(_current(viewer))
    )
    values = [
        base_level(
            list(times or []), now, decay=cfg.decay_parameter, total_count=count, first_access=first
        )
        for times, count, first in rows
    ]
    bounds = [-math.inf, *edges, math.inf]
    buckets = []
    for low, high in itertools.pairwise(bounds):
        buckets.append(
            {
                "low": None if math.isinf(low) else low,
                "high": None if math.isinf(high) else high,
                "count": sum(1 for v in values if low <= v < high),
            }
        )
    finite = [v for v in values if math.isfinite(v)]
    return {
        "histogram": buckets,
        "mean": round(sum(finite) / len(finite), 4) if finite else None,
        "min": round(min(finite), 4) if finite else None,
        "max": round(max(finite), 4) if finite else None,
        "below_retrieval_threshold": sum(1 for v in values if v < cfg.retrieval_threshold),
        "below_prune_threshold": sum(1 for v in values if v < settings.decay.prune_threshold),
    }


def _links(session: Session, viewer: Viewer) -> int:
    source, target = aliased(Note), aliased(Note)
    return int(
        session.scalar(
            select(func.count())
            .select_from(Link)
            .join(source, source.id == Link.source_id)
            .join(target, target.id == Link.target_id)
            .where(visible_clause(viewer, source), visible_clause(viewer, target))
        )
        or 0
    )


def _open_conflicts(session: Session, viewer: Viewer) -> int:
    a, b = aliased(Note), aliased(Note)
    return int(
        session.scalar(
            select(func.count())
            .select_from(Conflict)
            .join(a, a.id == Conflict.note_a_id)
            .join(b, b.id == Conflict.note_b_id)
            .where(Conflict.status == "open", visible_clause(viewer, a), visible_clause(viewer, b))
        )
        or 0
    )


def user_pipeline(*, session: Session, tenant_id: str, user_id: str) -> dict[str, Any]:
    """One user's episodes by status and open dead letters (those of its episodes)."""
    scope = and_(Episode.tenant_id == tenant_id, Episode.user_id == user_id)
    episodes = dict.fromkeys(EPISODE_STATUSES, 0)
    episodes.update(_grouped(session, Episode.status, scope))
    letters = count_dead_letters(session=session, tenant_id=tenant_id, user_id=user_id)
    return {"episodes": episodes, "dead_letters": letters}


def _pipeline(session: Session, viewer: Viewer, tenant_wide: bool) -> dict[str, Any]:
    pipeline = user_pipeline(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
    if tenant_wide:
        pipeline["dead_letters_tenant"] = count_dead_letters(
            session=session, tenant_id=viewer.tenant_id
        )
    return pipeline


def user_stats(
    *,
    session: Session,
    viewer: Viewer,
    settings: Settings,
    now: datetime | None = None,
    tenant_wide: bool = True,
) -> dict[str, Any]:
    """Everything `muma stats --json` prints, for the notes `viewer` may see; without
    `tenant_wide`, nothing that counts beyond the viewer's user."""
    now = now or utcnow()
    current = _current(viewer)
    notes: dict[str, Any] = {
        "current": int(session.scalar(select(func.count()).select_from(Note).where(current)) or 0),
        "pinned": int(
            session.scalar(select(func.count()).select_from(Note).where(current, Note.pinned)) or 0
        ),
        "by_status": _by_status(session, viewer),
    }
    notes["total"] = sum(notes["by_status"].values())
    for name, column in BREAKDOWNS.items():
        notes[f"by_{name}"] = _grouped(session, column, current)
    return {
        "tenant_id": viewer.tenant_id,
        "user_id": viewer.user_id,
        "agent_id": viewer.agent_id,
        "generated_at": now.isoformat(),
        "notes": notes,
        "activation": activation_histogram(session, viewer, settings, now),
        "links": _links(session, viewer),
        "conflicts": {"open": _open_conflicts(session, viewer)},
        "pipeline": _pipeline(session, viewer, tenant_wide),
    }
