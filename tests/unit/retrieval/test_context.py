"""The context block: format, budget (never exceeded), and empty when nothing fits."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

from memory.retrieval.context import CLOSE, OPEN, build_context, memory_line
from memory.retrieval.mmr import estimate_tokens
from memory.retrieval.service import SearchHit, _mentioned_speaker


def _hit(content: str, day: int = 8) -> SearchHit:
    note = SimpleNamespace(
        id=uuid.uuid4(), content=content, occurred_at=datetime(2023, 5, day, 13, 56, tzinfo=UTC)
    )
    return SearchHit(note=note, score=1.0, relevance=1.0, activation=None)  # type: ignore[arg-type]


def test_line_carries_the_date_and_collapses_whitespace() -> None:
    assert memory_line(_hit("Caroline went to   the\nsupport group.")) == (
        "- [8 May 2023] Caroline went to the support group."
    )


def test_block_never_exceeds_the_budget() -> None:
    hits = [
        _hit(f"Memory number {i} about a fairly ordinary thing that happened.") for i in range(50)
    ]
    for budget in (10, 25, 60, 200, 1000):
        block, kept, tokens = build_context(hits, budget)
        assert tokens <= budget
        if block:
            assert block.startswith(OPEN) and block.endswith(CLOSE)
            assert (
                estimate_tokens(OPEN)
                + estimate_tokens(CLOSE)
                + sum(estimate_tokens(memory_line(h)) for h in kept)
                == tokens
            )
            assert [h.note.content for h in kept] == [h.note.content for h in hits[: len(kept)]]


def test_nothing_fits_gives_an_empty_block() -> None:
    assert build_context([_hit("x " * 200)], 20) == ("", [], 0)
    assert build_context([], 1000) == ("", [], 0)


def test_speaker_prior_needs_exactly_one_named_participant() -> None:
    speakers = {"Caroline", "Melanie"}
    assert _mentioned_speaker("When did Caroline go to the group?", speakers) == "Caroline"
    assert _mentioned_speaker("Did Caroline and Melanie meet?", speakers) is None
    assert _mentioned_speaker("Where is the park?", speakers) is None
    assert _mentioned_speaker("What did caroline's dog eat?", speakers) == "Caroline"
