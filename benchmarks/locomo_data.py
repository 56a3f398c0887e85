"""LoCoMo loading: turns (what may be ingested), questions with normalised evidence, recall.

Only turns are ever ingested (speaker, text, image caption, session date): never the
questions, answers, observations or summaries (see shared/eval/README.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Turn:
    conversation: str
    session: int
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    occurred_at: datetime


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> tuple[list[Turn], list[Question]]:
    data = json.loads(path.read_text())
    turns: list[Turn] = []
    questions: list[Question] = []
    for sample in data:
        conv_id = sample["sample_id"]
        conversation = sample["conversation"]
        known: set[str] = set()
        for key, value in conversation.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if not match or not isinstance(value, list):
                continue
            session = int(match.group(1))
            when = parse_session_date(conversation[f"session_{session}_date_time"])
            for turn in value:
                known.add(turn["dia_id"])
                turns.append(
                    Turn(
                        conv_id,
                        session,
                        turn["dia_id"],
                        turn["speaker"],
                        turn["text"],
                        turn.get("blip_caption"),
                        when,
                    )
                )
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = normalise_evidence(qa.get("evidence", []), known)
            if evidence:
                questions.append(Question(conv_id, qa["question"], qa["category"], evidence))
    return turns, questions


def normalise_evidence(raw: list[str], known: set[str]) -> tuple[str, ...]:
    """Split joined ids, repair 'D:11:26' and 'D30:05', drop ids of turns that do not exist."""
    found: list[str] = []
    for item in raw:
        for match in _DIA.finditer(item):
            dia = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia in known and dia not in found:
                found.append(dia)
    return tuple(found)


def recall(evidence: tuple[str, ...], retrieved: list[set[str]], k: int) -> float:
    """Fraction of evidence turns among the direct sources of the top-k results."""
    seen: set[str] = set()
    for sources in retrieved[:k]:
        seen |= sources
    return sum(1 for e in evidence if e in seen) / len(evidence)
