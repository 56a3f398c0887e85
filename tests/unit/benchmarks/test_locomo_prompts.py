"""The long-prompt benchmark pastes another conversation's turns, about the asked length."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from benchmarks.locomo_data import Turn
from benchmarks.locomo_prompts import pasted_text


def _turns(conversation: str, speaker: str, count: int) -> list[Turn]:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    return [
        Turn(conversation, 1, f"D1:{i}", speaker, f"turn {i} of {conversation}", None, when)
        for i in range(count)
    ]


def test_pasted_text_comes_from_another_conversation_at_the_asked_length() -> None:
    by_conv = {"a": _turns("a", "Ann", 5), "b": _turns("b", "Bob", 5), "c": _turns("c", "Cy", 5)}
    rng = random.Random(1)
    for _ in range(20):
        text = pasted_text(by_conv, "a", 300, rng)
        assert len(text) == 300 and "Ann" not in text
        speakers = {line.split(":")[0] for line in text.splitlines()}
        assert len(speakers) == 1 and speakers <= {"Bob", "Cy"}
