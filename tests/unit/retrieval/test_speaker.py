"""The speaker prior's target (`memory.retrieval.speaker`): a named participant first,
then the assistant's words, then the user's own for a question in the first person."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memory.retrieval.speaker import asks_about_assistant, mentioned_speaker, speaker_prior

USER = SimpleNamespace(speaker="Dana", origin="user")
ASSISTANT = SimpleNamespace(speaker=None, origin="assistant")
FRIEND = SimpleNamespace(speaker="Ravi", origin="user")
NOTES = [USER, ASSISTANT, FRIEND]


def _lifted(query: str, asker: str | None = "Dana", notes: list = NOTES) -> list:
    """The notes the prior favours over the others (none when it treats all alike)."""
    prior = speaker_prior(query, notes, asker)  # type: ignore[arg-type]
    if prior is None:
        return []
    shares = [prior(n) for n in notes]
    return [n for n, share in zip(notes, shares, strict=True) if share > min(shares)]


def test_speaker_prior_needs_exactly_one_named_participant() -> None:
    speakers = {"Caroline", "Melanie"}
    assert mentioned_speaker("When did Caroline go to the group?", speakers) == "Caroline"
    assert mentioned_speaker("Did Caroline and Melanie meet?", speakers) is None
    assert mentioned_speaker("Where is the park?", speakers) is None
    assert mentioned_speaker("What did caroline's dog eat?", speakers) == "Caroline"


def test_a_named_participant_comes_before_the_first_person() -> None:
    assert _lifted("What did I give Ravi for his birthday?") == [FRIEND]


def test_the_first_person_lifts_the_users_own_words() -> None:
    assert _lifted("Which book did I finish first?") == [USER]
    assert _lifted("How long have my parents been staying with me?") == [USER]


def test_no_prior_without_a_known_name_or_a_first_person() -> None:
    assert _lifted("Which book did I finish first?", asker=None) == []
    assert _lifted("Which book is the longest?") == []
    # The name must be among the candidates' speakers: a user whose notes are all
    # someone else's words gets no prior.
    assert _lifted("Which book did I finish first?", notes=[ASSISTANT, FRIEND]) == []


@pytest.mark.parametrize(
    "query",
    [
        "Can you remind me of the Mayo Clinic video you recommended?",
        "What was the Soviet cartoon you mentioned last time?",
        "Which hotel did you just suggest?",
        "What was your advice about the fence?",
    ],
)
def test_a_question_about_what_the_assistant_said_lifts_its_words(query: str) -> None:
    assert asks_about_assistant(query)
    assert _lifted(query) == [ASSISTANT]


@pytest.mark.parametrize(
    "query",
    [
        "Can you suggest a hotel for my trip to Miami?",
        "Do you know when I started my job?",
        "Could you tell me what I ate?",
    ],
)
def test_a_request_to_the_assistant_is_not_a_question_about_its_words(query: str) -> None:
    assert not asks_about_assistant(query)
    assert _lifted(query) == [USER]


def test_the_users_own_words_are_favoured_by_lowering_the_others() -> None:
    # Relevance is capped at 1: when the user said nearly everything, lifting their notes
    # would squeeze the best of them together, so the other speakers' notes go down.
    prior = speaker_prior("Which book did I finish first?", NOTES, "Dana")  # type: ignore[arg-type]
    assert prior is not None
    assert [prior(n) for n in NOTES] == [0.0, -1.0, -1.0]
    named = speaker_prior("What did Ravi say?", NOTES, "Dana")  # type: ignore[arg-type]
    assert named is not None and [named(n) for n in NOTES] == [0.0, 0.0, 1.0]
