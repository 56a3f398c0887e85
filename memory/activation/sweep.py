"""Running the decay sweep for one user: the rules of `memory.activation.decay`, applied.

Invariants: archived and expired notes leave the BM25 statistics in the same
transaction; every hard-deleted row (the archived note and the closed earlier versions
of its lineage) first gets a Tombstone with the sha256 of its content, then the row is
deleted (links, provenance and conflicts cascade); every change is audited. Archived
notes are scanned before active ones, so a note archived by this sweep is considered for
deletion only by a later one: a dry run reports exactly what the real run does.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from memory.activation.decay import DecayAction, DecayReport, note_fate, scan_batches, state_of
from memory.config import Settings
from memory.notes.lexicon import unindex_note_terms
from memory.notes.models import Note, Tombstone
from memory.ops.models import AuditEvent

SWEEP_ACTOR = "decay"


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def sweep_user(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    dry_run: bool = False,
) -> DecayReport:
    """Expire, archive and hard-delete one user's notes as of `now`; see the module rules."""
    report = DecayReport(tenant_id=tenant_id, user_id=user_id, now=now, dry_run=dry_run)
    for status in ("archived", "active"):
        batches = scan_batches(
            session,
            tenant_id=tenant_id,
            user_id=user_id,
            status=status,
            batch_size=settings.sleep.batch_size,
            lock=not dry_run,
        )
        for rows in batches:
            report.batches += 1
            report.scanned += len(rows)
            actions = []
            for row in rows:
                fate = note_fate(state_of(row), now, settings.decay, settings.activation)
                if fate is not None:
                    actions.append(DecayAction.of_row(row, fate))
            report.actions.extend(actions)
            if not dry_run and actions:
                _apply(session, report, actions, now)
    session.flush()
    return report


def _apply(
    session: Session, report: DecayReport, actions: Sequence[DecayAction], now: datetime
) -> None:
    leaving = [a for a in actions if a.action in ("archive", "expire")]
    if leaving:
        _archive(session, leaving, now)
    doomed = [a for a in actions if a.action == "delete"]
    if doomed:
        report.history_deleted += _hard_delete(session, report, doomed, now)
    _audit(session, report, actions, now)


def _archive(session: Session, actions: Sequence[DecayAction], now: datetime) -> None:
    """Active → archived in one UPDATE; the notes' terms leave the BM25 statistics first.

    Set-based on purpose: the row update also re-inserts the row into every index (the
    status column is indexed, so no HOT update), which dominates the cost of a sweep.
    """
    ids = [a.note_id for a in actions]
    texts = session.execute(
        select(Note.tenant_id, Note.user_id, Note.content, Note.index_text, Note.window_text).where(
            Note.id.in_(ids)
        )
    ).all()
    # Rows carry every attribute note_terms reads (index_text, content, window_text).
    unindex_note_terms(session=session, notes=texts)  # type: ignore[arg-type]
    session.execute(
        update(Note)
        .where(Note.id.in_(ids))
        .values(status="archived", archived_at=now, updated_at=now),
        execution_options={"synchronize_session": False},
    )


def _hard_delete(
    session: Session, report: DecayReport, actions: Sequence[DecayAction], now: datetime
) -> int:
    """Tombstone then delete each archived note and its lineage's closed versions."""
    ids = [a.note_id for a in actions]
    history = session.execute(
        select(Note.id, Note.content, Note.lineage_id).where(
            Note.lineage_id.in_({a.lineage_id for a in actions}),
            Note.valid_to.is_not(None),
            Note.id.not_in(ids),
            Note.tenant_id == report.tenant_id,
            Note.user_id == report.user_id,
        )
    ).all()
    by_lineage = {a.lineage_id: a for a in actions}
    rows = [_tombstone(report, a.note_id, a.content, a.reason, now) for a in actions]
    for h in history:
        owner = by_lineage[h.lineage_id]
        reason = f"earlier version of {owner.note_id}: {owner.reason}"
        rows.append(_tombstone(report, h.id, h.content, reason, now))
    session.execute(pg_insert(Tombstone).on_conflict_do_nothing(), rows)
    session.execute(
        delete(Note).where(Note.id.in_(ids + [h.id for h in history])),
        execution_options={"synchronize_session": False},
    )
    return len(history)


def _tombstone(
    report: DecayReport, note_id: uuid.UUID, content: str, reason: str, now: datetime
) -> dict[str, Any]:
    return {
        "note_id": note_id,
        "tenant_id": report.tenant_id,
        "user_id": report.user_id,
        "reason": reason,
        "content_hash": content_hash(content),
        "deleted_at": now,
    }


ACTIONS = {"expire": "note.expired", "archive": "note.archived", "delete": "note.pruned"}


def _audit(
    session: Session, report: DecayReport, actions: Sequence[DecayAction], now: datetime
) -> None:
    # One multi-row INSERT: a first sweep over a large store may audit tens of thousands.
    session.execute(
        insert(AuditEvent),
        [
            {
                "tenant_id": report.tenant_id,
                "user_id": report.user_id,
                "actor": SWEEP_ACTOR,
                "action": ACTIONS[a.action],
                "entity_type": "note",
                "entity_id": str(a.note_id),
                "reason": a.reason,
                "data": {
                    "kind": a.kind,
                    "activation": _json_float(a.activation),
                    "at": now.isoformat(),
                },
            }
            for a in actions
        ],
    )


def _json_float(value: float | None) -> float | None:
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    return round(value, 4)


def decay_event_payloads(report: DecayReport) -> list[dict[str, object]]:
    """Stream events (note.archived / note.pruned) to publish after the commit."""
    if report.dry_run:
        return []
    return [
        {
            "type": "note.pruned" if a.action == "delete" else "note.archived",
            "tenant_id": report.tenant_id,
            "user_id": report.user_id,
            "note_id": str(a.note_id),
            "agent_id": a.agent_id,
            "visibility": a.visibility,
            "domain": a.domain,
            "kind": a.kind,
            "reason": a.reason,
            "at": report.now.isoformat(),
        }
        for a in report.actions
    ]
