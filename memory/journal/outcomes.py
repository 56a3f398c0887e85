"""What became of a captured turn and of each note it produced, in codes and in words.

Invariants: the words name only ids (shortened), origins, trust levels, settings and
the pipeline's own decision reasons, never a turn's or a memory's text; a note id the
viewer may not read (a merge target, an older version) is never named.

Outcomes of a note: `stored` (a new memory), `candidate` (waits for review), `merged`
(into a near-duplicate), `revised` (a new version of a memory), `invalidated` (said a
memory is no longer true), `edited` / `resolved` (carried into a new version by an
edit or a conflict's resolution), `pending`, `deleted`. Outcomes of a turn without
notes: `chatter`, `dropped`, `failed`, `waiting`, `forgotten`, `gone`; `hidden` when
the viewer may read none of its notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.config import Settings
from memory.ops.models import AuditEvent
from memory.trust.settings import CandidateSettings

RULE_REASONS = {"near-duplicate", "no similar note", "new information"}


def short(note_id: str | None) -> str:
    return (note_id or "")[:8]


@dataclass(frozen=True)
class NoteFacts:
    """One provenance row of a turn, with the note's state and its deciding event."""

    note_id: str
    relation: str
    status: str
    review: str | None
    trust: str
    origin: str
    kind: str
    agent_id: str
    closed: bool
    superseded_by: str | None
    visible: bool
    action: str | None  # the deciding event's
    reason: str | None
    target: str | None  # the decision's other note, when the viewer may read it
    similarity: float | None

    @classmethod
    def of(cls, row: Any, event: AuditEvent | None, readable: set[str]) -> NoteFacts:
        """`readable`: the named notes the viewer may read (no other id is kept)."""
        data = (event.data or {}) if event is not None else {}
        subject = event.entity_id if event is not None else None
        if row.relation != "extracted":
            target: Any = row.note_id  # the note that now carries the turn
        elif event is not None and event.action == "note.invalidated":
            target = subject
        else:
            target = data.get("target")
        superseded = str(row.superseded_by) if row.superseded_by else None
        return cls(
            note_id=str(row.note_id),
            relation=row.relation,
            status=row.status,
            review=row.review,
            trust=row.trust,
            origin=row.origin,
            kind=row.kind,
            agent_id=row.agent_id,
            closed=row.valid_to is not None,
            superseded_by=superseded if superseded in readable else None,
            visible=bool(row.visible),
            action=event.action if event is not None else None,
            reason=event.reason if event is not None and subject in readable else None,
            target=str(target) if target and str(target) in readable else None,
            similarity=data.get("similarity"),
        )


def candidate_reason(facts: NoteFacts, settings: CandidateSettings) -> str:
    """Why the note waits for review, by the rules that hold for it now."""
    rules = []
    if facts.trust in settings.trust:
        rules.append(f"its origin ({facts.origin}) is {facts.trust} trust")
    if facts.origin in settings.origins:
        rules.append(f"captures from {facts.origin} are reviewed")
    if facts.kind in settings.kinds:
        rules.append(f"{facts.kind} memories are reviewed")
    if facts.agent_id in settings.agents:
        rules.append(f"memories of agent {facts.agent_id} are reviewed")
    because = "; ".join(rules) or "the review rules when it was written"
    return f"waits as a candidate for review (not injected until approved): {because}"


def _decided(facts: NoteFacts) -> str:
    """The pipeline's own reason, when it adds to the outcome's words."""
    reason = (facts.reason or "").strip()
    return "" if not reason or reason in RULE_REASONS else f"; reason: {reason}"


def _similar(facts: NoteFacts) -> str:
    return f" (similarity {facts.similarity:.2f})" if facts.similarity is not None else ""


def _extracted(facts: NoteFacts, settings: Settings) -> tuple[str, str]:
    if facts.status == "pending":
        return "pending", "waits for the pipeline's decision"
    if facts.action == "note.invalidated":
        what = f"memory {short(facts.target)}" if facts.target else "a memory"
        return "invalidated", f"said {what} is no longer true; it was closed{_decided(facts)}"
    if facts.status == "deleted":
        return "deleted", "stored, deleted since"
    if facts.review == "candidate":
        return "candidate", candidate_reason(facts, settings.candidates)
    if facts.action == "note.updated":
        what = f"memory {short(facts.target)}" if facts.target else "an earlier memory"
        why = facts.reason if facts.reason and facts.reason not in RULE_REASONS else ""
        return "revised", f"revised {what} as a new version{f': {why}' if why else ''}"
    trust = "" if facts.trust == "high" else f" ({facts.trust} trust: origin {facts.origin})"
    return "stored", f"stored as a new memory{trust}{_decided(facts)}"


def note_outcome(facts: NoteFacts, settings: Settings) -> dict[str, Any]:
    """One note of a turn: what happened to it and why, and what it is now."""
    if facts.relation == "reinforced":
        code = "merged"
        why = (
            f"merged into memory {short(facts.target)} as a near-duplicate"
            f"{_similar(facts)}{_decided(facts)}"
        )
    elif facts.relation == "revised":
        code, why = "edited", f"carried into memory {short(facts.target)} by an edit"
    elif facts.relation == "merged":
        code, why = "resolved", f"carried into memory {short(facts.target)} by resolving a conflict"
    else:
        code, why = _extracted(facts, settings)
    return {
        "note_id": facts.note_id,
        "relation": facts.relation,
        "outcome": code,
        "why": why + _now(facts),
        "target_id": facts.target,
        "similarity": facts.similarity,
        "origin": facts.origin,
        "trust": facts.trust,
        "candidate": facts.review == "candidate",
        "status": facts.status,
        "closed": facts.closed,
    }


def _now(facts: NoteFacts) -> str:
    if facts.relation != "extracted" or facts.status in ("pending", "deleted"):
        return ""
    if facts.superseded_by:
        return f"; since revised by memory {short(facts.superseded_by)}"
    if facts.closed:
        return "; closed since"
    return "; archived since" if facts.status == "archived" else ""


# Turns the capture rules kept out of memory (memory.episodes.worth): outcome and reason.
SKIPPED = {
    "SKIP_COMMAND": ("command", "a command to the agent or to the memory, not a memory"),
    "SKIP_ACK": ("acknowledgement", "an acknowledgement that only steers the task"),
    "SKIP_ECHO": ("echo", "it repeats what the memory service injected or returned"),
}


def turn_outcome(
    episode: Any, notes: list[dict[str, Any]], *, hidden: bool, settings: Settings
) -> tuple[str, str]:
    """The turn's outcome: its notes' (one code, or `several`), else its own state."""
    if hidden:
        return "hidden", "what it produced is not visible to this viewer"
    if notes:
        codes = {n["outcome"] for n in notes}
        code = codes.pop() if len(codes) == 1 else "several"
        return code, "; ".join(n["why"] for n in notes)
    if episode.status in ("queued", "processing"):
        return "waiting", f"waits in the pipeline ({episode.status})"
    if episode.status == "failed":
        return "failed", "failed its last attempt; kept, with a dead letter to retry"
    if episode.decision == "NOOP":
        return "chatter", "skipped: nothing worth keeping (chatter, filler)"
    if episode.decision in SKIPPED:
        code, why = SKIPPED[episode.decision]
        return code, f'skipped: {why} (capture rules, README "What is remembered")'
    if episode.decision == "DROP":
        level = settings.trust.level(episode.origin)
        return "dropped", (
            f"dropped: its origin ({episode.origin}) is {level} trust and "
            "trust.dropLowTrust keeps nothing of low-trust captures"
        )
    if episode.decision == "ERASED":
        return "forgotten", "its memories were forgotten and its text erased"
    return "gone", "its memories are gone (forgotten, pruned or expired)"
