"""Running the decay sweep for one user: the rules of `memory.activation.decay`, applied.

Set-based: one statement scores every current, unpinned note of the user in PostgreSQL
(`decay_sql.scan_user`); the notes a rule selects are then claimed in batches of
`sleep.batch_size` (FOR UPDATE SKIP LOCKED, rules re-checked on the locked rows) and each
batch is applied with a few statements: one UPDATE for the archived and expired notes,
the erasure of the deleted ones (memory.erasure.forget), one INSERT of audit events. No
note a rule leaves alone is locked or written.

Invariants: archived and expired notes leave the BM25 statistics in the same
transaction; a note the sweep deletes is erased as a forget erases it, with its lineage
(memory.erasure.forget: tombstones without content, the turns it came from, what it gave
other notes, knowledge built from it); every change is audited. All rules
are evaluated on the state before the sweep, so a note archived by this sweep is
considered for deletion only by a later one; a dry run scores the same notes and
reports exactly what the real run does (less any row another transaction holds).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from memory.activation.decay import DecayAction, DecayReport, fate_for
from memory.activation.decay_sql import claim_notes, scan_user
from memory.config import Settings
from memory.erasure.forget import erase_lineages
from memory.notes.lexicon import unindex_note_terms
from memory.notes.models import Note
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
    scope: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id, "now": now}
    report.scanned, selected = scan_user(session, **scope, settings=settings)
    size = settings.sleep.batch_size
    for start in range(0, len(selected), size):
        ids = [row.id for row in selected[start : start + size]]
        rows = claim_notes(session, ids, **scope, settings=settings, lock=not dry_run)
        report.batches += 1
        actions = [
            DecayAction.of_row(row, fate_for(row.rule, row.strength, settings.decay))
            for row in rows
        ]
        report.actions.extend(actions)
        if not dry_run and actions:
            _apply(session, report, actions, rows, now)
    session.flush()
    return report


def _apply(
    session: Session,
    report: DecayReport,
    actions: Sequence[DecayAction],
    rows: Sequence[Any],
    now: datetime,
) -> None:
    leaving = {a.note_id for a in actions if a.action in ("archive", "expire")}
    if leaving:
        _archive(session, [r for r in rows if r.id in leaving], now)
    doomed = [a for a in actions if a.action == "delete"]
    if doomed:
        report.history_deleted += _hard_delete(session, report, doomed, now)
    _audit(session, report, actions, now)


def _archive(session: Session, rows: Sequence[Any], now: datetime) -> None:
    """Active → archived in one UPDATE; the notes' terms leave the BM25 statistics first.

    The claimed rows carry every attribute unindexing reads (tenant, user, the stored
    terms and their counts). The row update re-inserts the row into every index (status
    is indexed, so no HOT update), including both HNSW graphs: that dominates the cost.
    """
    unindex_note_terms(session=session, notes=rows)
    session.execute(
        update(Note)
        .where(Note.id.in_([r.id for r in rows]))
        .values(status="archived", archived_at=now, updated_at=now),
        execution_options={"synchronize_session": False},
    )


def _hard_delete(
    session: Session, report: DecayReport, actions: Sequence[DecayAction], now: datetime
) -> int:
    """Erase each archived note with its lineage, as a forget does; the closed versions
    erased with them are counted."""
    lineages = sorted({a.lineage_id for a in actions})
    reasons = "; ".join(sorted({a.reason for a in actions}))
    erased = erase_lineages(
        session=session,
        tenant_id=report.tenant_id,
        user_id=report.user_id,
        lineage_ids=lineages,
        actor=SWEEP_ACTOR,
        reason=f"pruned by the decay sweep: {reasons}",
        now=now,
    )
    return max(len(erased.note_ids) - len(actions), 0)


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
