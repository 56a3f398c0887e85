"""Conflict detection for one user: similar pairs in the band, classified and stored.

Candidates: active, current notes with embeddings, knowledge notes excluded (they are
near copies of their sources by construction). Within each k-means partition
(`sleep.partition_size`) every pair with cosine in [conflict_min, conflict_max] is a
candidate; each note keeps its best CANDIDATES_PER_NOTE partners, pairs across agents
first (what one agent learned may contradict another: the write path already compares
an agent's new note with what exists). A pair is classified once: LLM when configured,
else `detect.classify`, whose first rule drops pairs not about the same subject.

Invariants: one row per unordered pair (note_a_id < note_b_id, unique), so re-runs add
only new pairs and a pair is classified (and an LLM asked) once; contradictory and
ambiguous pairs are stored `open` and audited (`conflict.detected`); compatible pairs
and refinements (`subsumes`: one note says all the other does, and more) are stored
`resolved` with resolution {"auto": <class>} (bookkeeping rows: not audited, not listed
unless asked for); the detection reason and method are kept in resolution["detection"].
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import insert, select, text
from sqlalchemy.orm import Session

from memory.access.audience import Audience, audience_key
from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.conflicts.detect import Verdict, classify, classify_with_llm
from memory.conflicts.models import Conflict
from memory.conflicts.pairs import Candidate, band_pairs, band_pairs_for
from memory.consolidation.knowledge import SourceNote
from memory.consolidation.snapshot import Snapshot, load_snapshot
from memory.errors import MemoryServiceError
from memory.ops.models import AuditEvent

log = logging.getLogger(__name__)
# Incremental runs also compare notes changed this long before the previous cycle.
SINCE_OVERLAP = timedelta(hours=1)
# Classes recorded as settled, not raised: compatible pairs and refinements.
AUTO_RESOLVED = ("compatible", "subsumes")


@dataclass
class ConflictReport:
    tenant_id: str
    user_id: str
    now: datetime
    scanned: int = 0
    candidates: int = 0
    found: list[tuple[Candidate, Verdict]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {"scanned": self.scanned, "candidates": self.candidates}
        for name in ("contradictory", "subsumes", "ambiguous", "compatible"):
            out[name] = sum(1 for _, v in self.found if v.classification == name)
        return out


def _known_pairs(session: Session, tenant_id: str, user_id: str) -> set[tuple[uuid.UUID, ...]]:
    rows = session.execute(
        select(Conflict.note_a_id, Conflict.note_b_id).where(
            Conflict.tenant_id == tenant_id, Conflict.user_id == user_id
        )
    )
    return {(a, b) for a, b in rows}


def _verdict(candidate: Candidate, llm: LlmClient | None) -> Verdict:
    a, b = candidate.a, candidate.b
    heuristic = classify(a.content, b.content, speaker_a=a.speaker, speaker_b=b.speaker)
    if llm is None or not heuristic.related:
        return heuristic
    try:
        return classify_with_llm(llm, a.content, b.content)
    except MemoryServiceError as exc:  # invalid output or model down: the heuristic stands
        log.warning("LLM conflict classification failed, using heuristics: %s", exc)
        return heuristic


def detect_conflicts(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    llm: LlmClient | None = None,
    snapshot: Snapshot | None = None,
    since: datetime | None = None,
) -> ConflictReport:
    """Find, classify and store the user's new conflict pairs as of `now`.

    With `since` (the previous cycle's clock), only notes changed (activated, revised,
    restored, used) after `since - SINCE_OVERLAP` are compared, each with every note:
    what a nightly run needs, since older pairs were compared by an earlier run (the
    overlap covers a note whose write committed after that run read the store; pairs
    already stored are skipped). Without it, every note's partners are sought within its
    partition. `snapshot` (the user's active notes, read once per cycle) is loaded when
    absent.
    """
    report = ConflictReport(tenant_id=tenant_id, user_id=user_id, now=now)
    snapshot = snapshot or load_snapshot(session, tenant_id=tenant_id, user_id=user_id)
    facts = snapshot.where([n.kind != "knowledge" for n in snapshot.notes])
    notes, vectors = facts.notes, facts.vectors
    report.scanned = len(notes)
    known = _known_pairs(session, tenant_id, user_id)
    if since is None:
        found = band_pairs(notes, vectors, settings)
    else:
        after = since - SINCE_OVERLAP
        new = [i for i, n in enumerate(notes) if n.updated_at is not None and n.updated_at > after]
        found = band_pairs_for(notes, vectors, new, settings)
    candidates = [c for c in found if (c.a.id, c.b.id) not in known]
    report.candidates = len(candidates)
    stored: list[tuple[Candidate, Verdict]] = []
    for candidate in candidates:
        verdict = _verdict(candidate, llm)
        if not verdict.related:
            continue  # not about the same subject: not a pair worth keeping
        report.found.append((candidate, verdict))
        stored.append((candidate, verdict))
    _store(session, report, stored)
    return report


def _row(report: ConflictReport, c: Candidate, verdict: Verdict) -> dict[str, object]:
    # Compatible pairs and refinements (one note says more than the other) are recorded,
    # so each pair is classified once, but they are not conflicts: only contradictory and
    # ambiguous pairs are left open for someone to resolve.
    settled = verdict.classification in AUTO_RESOLVED
    detection = {"reason": verdict.reason, "method": verdict.method, "broader": verdict.broader}
    resolution = {"detection": detection, **({"auto": verdict.classification} if settled else {})}
    return {
        "id": uuid.uuid4(),
        "tenant_id": report.tenant_id,
        "user_id": report.user_id,
        "note_a_id": c.a.id,
        "note_b_id": c.b.id,
        "agent_a_id": c.a.agent_id,
        "agent_b_id": c.b.agent_id,
        "similarity": round(c.similarity, 4),
        "classification": verdict.classification,
        "status": "resolved" if settled else "open",
        "resolution": json.dumps(resolution),
        "created_at": report.now,
        "resolved_at": report.now if settled else None,
    }


# Column → array type of the one INSERT ... SELECT FROM unnest(...) that stores a run.
_COLUMNS = {
    "id": "uuid[]",
    "tenant_id": "text[]",
    "user_id": "text[]",
    "note_a_id": "uuid[]",
    "note_b_id": "uuid[]",
    "agent_a_id": "text[]",
    "agent_b_id": "text[]",
    "similarity": "float8[]",
    "classification": "text[]",
    "status": "text[]",
    "resolution": "jsonb[]",
    "created_at": "timestamptz[]",
    "resolved_at": "timestamptz[]",
}
_INSERT = text(
    f"INSERT INTO conflicts ({', '.join(_COLUMNS)}) SELECT * FROM unnest("
    + ", ".join(f"CAST(:{name} AS {kind})" for name, kind in _COLUMNS.items())
    + ") ON CONFLICT ON CONSTRAINT uq_conflicts_pair DO NOTHING"
)


def _store(
    session: Session, report: ConflictReport, pairs: list[tuple[Candidate, Verdict]]
) -> None:
    """Insert the pairs in one statement (a concurrent run's rows win: ON CONFLICT DO
    NOTHING; a first run stores tens of thousands) and audit the findings."""
    if not pairs:
        return
    rows = [_row(report, c, v) for c, v in pairs]
    session.execute(_INSERT, {name: [row[name] for row in rows] for name in _COLUMNS})
    findings = [
        (row, pair)
        for row, pair in zip(rows, pairs, strict=True)
        if pair[1].classification not in AUTO_RESOLVED
    ]
    if not findings:
        return
    session.execute(
        insert(AuditEvent),
        [
            {
                "tenant_id": report.tenant_id,
                "user_id": report.user_id,
                "actor": "conflicts",
                "action": "conflict.detected",
                "entity_type": "conflict",
                "entity_id": str(row["id"]),
                "reason": v.reason,
                "data": {
                    "classification": v.classification,
                    "method": v.method,
                    "notes": [str(c.a.id), str(c.b.id)],
                    "similarity": row["similarity"],
                },
            }
            for row, (c, v) in findings
        ],
    )
    session.flush()


def conflict_event_payloads(report: ConflictReport) -> list[dict[str, object]]:
    """`conflict.found` stream events for new open conflicts (published after commit).

    The event carries the notes' audience when both share one (memory.access.audience:
    each may flow into the other); otherwise it is marked user-only, so no agent learns
    of a note it may not see.
    """
    out: list[dict[str, object]] = []
    for candidate, verdict in report.found:
        a, b = candidate.a, candidate.b
        if verdict.classification in AUTO_RESOLVED:
            continue
        same = _audience(a) == _audience(b)
        out.append(
            {
                "type": "conflict.found",
                "tenant_id": report.tenant_id,
                "user_id": report.user_id,
                "note_ids": [str(a.id), str(b.id)],
                "note_id": str(a.id),
                "agent_id": a.agent_id if same else None,
                "visibility": a.visibility if same else "user-only",
                "domain": a.domain,
                "classification": verdict.classification,
                "at": report.now.isoformat(),
            }
        )
    return out


def _audience(note: SourceNote) -> tuple[str, ...]:
    return audience_key(Audience.of(note))
