"""The deterministic decide rules: a near-duplicate is merged only when it adds nothing."""

from __future__ import annotations

import uuid

import pytest

from memory.access.audience import Audience
from memory.config import PipelineSettings
from memory.notes.decide import Candidate, adds_information, decide_by_rules


@pytest.mark.parametrize(
    ("new", "old", "adds"),
    [("My favourite colour is blue.", "My favourite colour is blue.", False),
     ("I really love hiking in the Alps!", "I love hiking in the Alps.", False),
     ("worker-3 processed job 31337: ok", "worker-3 processed job 31336: ok", True),
     ("ERROR E0502 in src/book.rs", "ERROR in src/book.rs", True),
     ("The deploy failed because the cache key was missing and the disk filled up",
      "The deploy failed", True)],
)  # fmt: skip
def test_what_a_near_duplicate_adds(new: str, old: str, adds: bool) -> None:
    assert adds_information(new, old) is adds


def _candidate(content: str, similarity: float) -> Candidate:
    audience = Audience.of  # the rule reads neither audience nor standing
    return Candidate(uuid.uuid4(), content, None, similarity, audience, ("high", None))  # type: ignore[arg-type]


def test_a_near_identical_log_chunk_with_its_own_numbers_is_added() -> None:
    settings = PipelineSettings()
    same = decide_by_rules("job 7 ok", None, [_candidate("job 7 ok", 0.99)], settings)
    assert same.action == "NOOP"
    other = decide_by_rules("job 8 ok", None, [_candidate("job 7 ok", 0.99)], settings)
    assert other.action == "ADD"
