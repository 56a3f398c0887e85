"""Stage 5, decide: ADD, UPDATE, DELETE or NOOP for a new note against similar ones.

Deterministic rules (no LLM): a near-duplicate (cosine >= dedup threshold) that adds no
number and few words of its own is a NOOP that reinforces the existing note; the same
subject stated with a different value by the same speaker is an UPDATE of that note;
anything else is an ADD. With an LLM configured, the model chooses among the same
candidates and its answer is validated against them.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from memory.access.audience import Audience
from memory.clients.llm import LlmClient
from memory.config import PipelineSettings
from memory.retrieval.text import content_tokens

DECISIONS = ("ADD", "UPDATE", "DELETE", "NOOP")
UPDATE_MIN_SIMILARITY = 0.6

# "my <subject> is <value>", "I live in <value>", "I work as/at <value>", ...
_SUBJECT_PATTERNS: list[tuple[re.Pattern[str], str | None]] = [
    (
        re.compile(r"\bmy\s+((?:[a-z]+\s){0,3}?[a-z]+)\s+(?:is|are|was|has become)\s+(.+)", re.I),
        None,
    ),
    (re.compile(r"\b(?:i|we)\s+(?:now\s+)?live\s+in\s+(.+)", re.I), "residence"),
    (re.compile(r"\b(?:i|we)\s+(?:now\s+)?work\s+(?:as|at|for)\s+(.+)", re.I), "work"),
    (re.compile(r"\bi(?:'m|\s+am)\s+(\d+)\s+years?\s+old", re.I), "age"),
    (re.compile(r"\bmy\s+name\s+is\s+(.+)", re.I), "name"),
]


@dataclass(frozen=True)
class Candidate:
    note_id: uuid.UUID
    content: str
    speaker: str | None
    similarity: float
    # Who reads it (memory.access.audience): the decide stage merges a note only into a
    # note of the same audience.
    audience: Audience
    # Its trust and review state (memory.trust): a note merges only into a note of the
    # same standing, so untrusted text never reinforces or revises a trusted note.
    standing: tuple[str, str | None]


@dataclass(frozen=True)
class Decision:
    action: str
    target_id: uuid.UUID | None = None
    similarity: float | None = None
    reason: str = ""


def subject_and_value(text: str) -> tuple[str, str] | None:
    """The attribute a statement sets and its value, or None for other statements."""
    # Resolved third-person facts ("Ann's dog is ...") are read like first-person ones.
    normalised = re.sub(r"\b[A-Z][a-z]+'s\s", "my ", text)
    normalised = re.sub(r"^[A-Z][a-z]+:\s*", "", normalised)
    for pattern, fixed in _SUBJECT_PATTERNS:
        match = pattern.search(normalised)
        if match:
            subject = fixed or match.group(1).lower()
            value = match.group(match.lastindex or 1).strip(" .!?").lower()
            return subject, value
    return None


# A near-duplicate that brings more new content words than this share is kept.
NEW_WORDS_SHARE = 0.2


def adds_information(content: str, existing: str) -> bool:
    """Whether `content` says something `existing` does not, though their vectors are
    near-identical: a number or id it alone holds (a log's job number, an error code),
    or new content words beyond NEW_WORDS_SHARE. Merging such a note would lose them."""
    mine = set(content_tokens(content))
    new = mine - set(content_tokens(existing))
    if any(any(ch.isdigit() for ch in token) for token in new):
        return True
    return len(new) > max(1.0, NEW_WORDS_SHARE * len(mine))


def decide_by_rules(
    content: str, speaker: str | None, candidates: list[Candidate], settings: PipelineSettings
) -> Decision:
    if not candidates:
        return Decision("ADD", reason="no similar note")
    best = candidates[0]
    if best.similarity >= settings.dedup_threshold and not adds_information(content, best.content):
        return Decision("NOOP", best.note_id, best.similarity, "near-duplicate")
    mine = subject_and_value(content)
    if mine is not None:
        for candidate in candidates:
            if candidate.similarity < UPDATE_MIN_SIMILARITY or candidate.speaker != speaker:
                continue
            theirs = subject_and_value(candidate.content)
            if theirs and theirs[0] == mine[0] and theirs[1] != mine[1]:
                return Decision(
                    "UPDATE",
                    candidate.note_id,
                    candidate.similarity,
                    f"new value for '{mine[0]}'",
                )
    return Decision("ADD", reason="new information")


DECIDE_SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": list(DECISIONS)},
        "target": {"type": "integer"},
        "reason": {"type": "string"},
    },
    "required": ["decision"],
}

DECIDE_SYSTEM = (
    "You maintain a user's long-term memory. Given a NEW fact and numbered EXISTING notes, "
    "answer ADD (new information), UPDATE (the new fact replaces existing note `target`), "
    "DELETE (the new fact says existing note `target` is no longer true, and adds nothing), "
    "or NOOP (existing note `target` already says this). Answer with JSON only."
)


def decide_with_llm(llm: LlmClient, content: str, candidates: list[Candidate]) -> Decision:
    if not candidates:
        return Decision("ADD", reason="no similar note")
    listing = "\n".join(f"{i}. {c.content}" for i, c in enumerate(candidates))
    answer = llm.complete_json(
        DECIDE_SYSTEM, f"NEW: {content}\nEXISTING:\n{listing}", DECIDE_SCHEMA, name="decide"
    )
    action = answer["decision"]
    if action == "ADD":
        return Decision("ADD", reason=str(answer.get("reason", "llm")))
    index = answer.get("target")
    if not isinstance(index, int) or not 0 <= index < len(candidates):
        # A decision that names no valid note cannot be applied safely: keep the fact.
        return Decision("ADD", reason=f"llm chose {action} without a valid target")
    target = candidates[index]
    return Decision(action, target.note_id, target.similarity, str(answer.get("reason", "llm")))
