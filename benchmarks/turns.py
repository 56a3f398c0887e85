"""Conversation turns for benchmarks: LoCoMo turns when available, else synthetic ones.

Only turns (speaker, text, image caption, session date) are read from LoCoMo; never its
answers, observations or summaries. Each turn becomes one capture episode: the user is
the conversation, the session is the LoCoMo session, the speaker is the turn's speaker.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.stack import ROOT

DEFAULT_LOCOMO = ROOT.parent / "shared" / "eval" / "locomo10.json"
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    user_id: str
    session_id: str
    speaker: str
    text: str
    occurred_at: datetime
    turn_id: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def episode(self, *, agent_id: str = "bench-agent", run_id: str = "") -> dict[str, Any]:
        """The POST /v1/episodes body for this turn."""
        return {
            "user_id": self.user_id,
            "agent_id": agent_id,
            "session_id": self.session_id,
            "role": "user",
            "speaker": self.speaker,
            "content": self.text,
            "occurred_at": self.occurred_at.isoformat(),
            "metadata": self.metadata,
            "idempotency_key": f"{run_id}:{self.user_id}:{self.turn_id}",
        }


def parse_session_date(value: str | None) -> datetime | None:
    """LoCoMo dates look like "1:56 pm on 8 May, 2023"."""
    if not value:
        return None
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def locomo_turns(path: Path, *, user_prefix: str = "bench") -> list[Turn]:
    """Every turn of every conversation, in conversational order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    for sample in data:
        conversation = sample["conversation"]
        user_id = f"{user_prefix}-{sample.get('sample_id', len(turns))}"
        sessions = sorted(
            (int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.match(key))
        )
        for number, key in sessions:
            start = parse_session_date(conversation.get(f"{key}_date_time"))
            start = start or datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=number)
            for index, raw in enumerate(conversation[key]):
                turns.append(_turn(raw, user_id, f"{user_id}-s{number}", start, index))
    return turns


def _turn(raw: dict[str, Any], user_id: str, session_id: str, start: datetime, i: int) -> Turn:
    metadata: dict[str, Any] = {"dia_id": raw.get("dia_id")}
    if raw.get("blip_caption"):
        metadata["blip_caption"] = raw["blip_caption"]
    return Turn(
        user_id=user_id,
        session_id=session_id,
        speaker=str(raw.get("speaker") or "Speaker"),
        text=str(raw.get("text") or "").strip() or "(image)",
        occurred_at=start + timedelta(seconds=30 * i),
        turn_id=str(raw.get("dia_id") or i),
        metadata=metadata,
    )


_SUBJECTS = [
    "my sister",
    "our team",
    "the new job",
    "the garden",
    "my trip to Lisbon",
    "the marathon",
    "my dog Max",
    "the book club",
    "the kitchen remodel",
]
_VERBS = ["started", "finished", "planned", "talked about", "worried about", "loved"]
_TAILS = ["last weekend", "yesterday", "a few days ago", "this morning", "in March"]


def synthetic_turns(count: int, *, users: int = 10, seed: int = 7) -> list[Turn]:
    """Plausible chat turns when LoCoMo is not available (deterministic for a seed)."""
    rng = random.Random(seed)
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = []
    for i in range(count):
        user = i % users
        speakers = (f"Alex{user}", f"Sam{user}")
        text = (
            f"I {rng.choice(_VERBS)} {rng.choice(_SUBJECTS)} {rng.choice(_TAILS)}, "
            f"and honestly it was {rng.choice(['great', 'hard', 'a surprise', 'fun'])}. "
            f"What about {rng.choice(_SUBJECTS)}?"
        )
        turns.append(
            Turn(
                user_id=f"bench-syn-{user}",
                session_id=f"bench-syn-{user}-s{i // (users * 20)}",
                speaker=speakers[(i // users) % 2],
                text=text,
                occurred_at=start + timedelta(minutes=i),
                turn_id=f"T{i}",
            )
        )
    return turns


def load_turns(count: int, path: Path | None = None) -> tuple[list[Turn], str]:
    """`count` turns and a description of where they came from."""
    path = path or DEFAULT_LOCOMO
    if path.is_file():
        turns = locomo_turns(path)
        if len(turns) >= count:
            return turns[:count], f"LoCoMo ({path.name}, first {count} of {len(turns)} turns)"
        extra = synthetic_turns(count - len(turns))
        return turns + extra, f"LoCoMo ({len(turns)} turns) + {len(extra)} synthetic"
    return synthetic_turns(count), f"synthetic ({count} turns; {path} not found)"
