"""/v1/context injects only memories with evidence of relevance to the prompt."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from memory.config import Settings
from memory.retrieval.gate import (
    E5_FLOORS,
    MINILM_FLOORS,
    EvidenceFloors,
    evidence_floors,
    evidenced,
)
from memory.retrieval.service import SearchHit

FLOORS = EvidenceFloors(prompt=0.30, hit=0.20)


def _hit(similarity: float | None, speaker: str | None = None) -> SearchHit:
    note = SimpleNamespace(id=uuid.uuid4(), content="x", speaker=speaker)
    hit = SearchHit(note=note, score=1.0, relevance=1.0, activation=None)  # type: ignore[arg-type]
    hit.similarity = similarity
    return hit


def test_an_off_topic_prompt_gets_nothing() -> None:
    hits = [_hit(0.29), _hit(0.22), _hit(None)]
    assert evidenced(hits, "How do I center a div in CSS?", FLOORS) == []


def test_a_prompt_like_one_memory_keeps_those_with_evidence_in_order() -> None:
    strong, weak, unknown, middling = _hit(0.62), _hit(0.12), _hit(None), _hit(0.25)
    kept = evidenced([strong, weak, unknown, middling], "What is my dog called?", FLOORS)
    assert kept == [strong, unknown, middling]


def test_a_prompt_naming_a_speaker_of_the_memories_is_about_them() -> None:
    hits = [_hit(0.23, speaker="Jean"), _hit(0.18, speaker="John")]
    assert evidenced(hits, "Which city have both Jean and John visited?", FLOORS) == hits[:1]
    # A role is not a person, and a name must be a whole word ("Jean" in "jeans").
    roles = [_hit(0.25, speaker="assistant"), _hit(0.25, speaker="Jean")]
    assert evidenced(roles, "What did the assistant say about my jeans?", FLOORS) == []


def test_without_any_cosine_the_routes_answer_stands() -> None:
    hits = [_hit(None), _hit(None)]
    assert evidenced(hits, "How do I center a div in CSS?", FLOORS) == hits


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, MINILM_FLOORS),
        ({"embedding": {"provider": "hash"}}, EvidenceFloors(0.0, 0.0)),
        ({"embedding": {"provider": "e5", "model": "multilingual-e5-small"}}, E5_FLOORS),
        # Another model under a local provider has not been measured: no floors.
        ({"embedding": {"provider": "openai", "model": "all-MiniLM-L6-v2"}}, EvidenceFloors()),
        ({"retrieval": {"context_min_similarity": 0.0}}, EvidenceFloors(0.0, 0.20)),
        (
            {"embedding": {"provider": "hash"}, "retrieval": {"context_min_hit_similarity": 0.2}},
            EvidenceFloors(0.0, 0.2),
        ),
    ],
)
def test_floors_are_the_embedders_own_unless_set(
    env: dict[str, dict[str, object]], expected: EvidenceFloors
) -> None:
    assert evidence_floors(Settings(**env)) == expected  # type: ignore[arg-type]


def test_a_prompt_read_with_the_users_name_must_come_nearer() -> None:
    assert evidence_floors(Settings(), resolved=True) == EvidenceFloors(0.50, 0.40)
    # "How does Alice center a div in CSS?" comes near every note holding "Alice".
    floors = evidence_floors(Settings(), resolved=True)
    assert evidence_floors(Settings()) == MINILM_FLOORS
    assert evidenced([_hit(0.45), _hit(0.41)], "How do I center a div in CSS?", floors) == []
    # A floor switched off stays off.
    off = Settings(retrieval={"context_min_similarity": 0.0})  # type: ignore[arg-type]
    assert evidence_floors(off, resolved=True) == EvidenceFloors(0.0, 0.40)
