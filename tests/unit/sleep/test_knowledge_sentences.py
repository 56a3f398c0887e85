"""What a knowledge note may be made of (`memory.consolidation.sentences`): facts about
someone or something, never the talk around them. The chatter below is from LoCoMo's
first conversation, as the issue that asked for this quoted it."""

from __future__ import annotations

import numpy as np
import pytest

from memory.consolidation.pipeline import extractive_summary, unit_rows
from memory.consolidation.sentences import is_chatter, knowledge_sentences, known_names

NAMES = frozenset({"Caroline", "Melanie"})


@pytest.mark.parametrize(
    "text",
    [
        "Wow, what a fun moment! Did you see that band? Got any fav tunes?",
        "What's been up since we talked? Been a busy week since we talked. Long time no talk.",
        "That bowl is gorgeous! Pretty proud of it! That bowl is awesome, Mel!",
        "Wow, Caroline, that painting is awesome! Wow Mel, that's stunning!",
        "Caroline, that painting is awesome! Melanie, so true.",
        "Your words really mean a lot. Thanks for the tip, Caroline.",
        "Life's tough but it's worth it when we have things that make us happy.",
    ],
)
def test_chatter_has_no_knowledge_sentence(text: str) -> None:
    assert knowledge_sentences(text, NAMES) == []
    assert is_chatter(text, NAMES)


def test_facts_keep_their_names_numbers_and_order() -> None:
    text = (
        "Wow, that rocks! Caroline went to a LGBTQ support group yesterday. "
        "How're ya doin'? Melanie has two kids, 4 and 7. Thanks, Caroline!"
    )
    assert knowledge_sentences(text, NAMES) == [
        "Caroline went to a LGBTQ support group yesterday.",
        "Melanie has two kids, 4 and 7.",
    ]
    # A name in the middle of a sentence is a name without being known; an acronym too.
    assert knowledge_sentences("Last week the team moved to Lisbon.") != []
    assert knowledge_sentences("The migration runs on AWS now.") != []
    # An exclamation with a fact in it is a fact: "Caroline got the job!"
    assert knowledge_sentences("Caroline got the job!", NAMES) == ["Caroline got the job!"]


def test_a_summary_says_each_fact_once_and_leaves_the_talk_out() -> None:
    texts = [
        "Wow, what a fun moment! Caroline started playing acoustic guitar five years ago.",
        "Caroline started playing acoustic guitar five years ago!",
        "Guitar's mostly Caroline's thing. Did you see that band?",
    ]
    vectors = unit_rows(np.array([[1.0, 0.1], [1.0, 0.12], [0.9, 0.3]]))
    summary = extractive_summary(texts, vectors, NAMES)
    assert summary.content.count("started playing acoustic guitar") == 1
    assert "Guitar's mostly Caroline's thing." in summary.content
    assert not any(talk in summary.content for talk in ("Wow", "band", "?"))


def test_names_are_learned_from_the_notes_and_the_first_person_counts() -> None:
    from types import SimpleNamespace

    notes = [
        SimpleNamespace(speaker=None, content="Alice ran 10 kilometres. Art is everywhere."),
        SimpleNamespace(speaker=None, content="Alice bought new running shoes."),
        SimpleNamespace(speaker=None, content="Art can be a mood-booster, and art heals."),
        SimpleNamespace(speaker="Dana", content="Thanks!"),
    ]
    names = known_names(notes)  # type: ignore[arg-type]
    assert names == {"Alice", "Dana"}  # "art" is written in lower case too: not a name
    assert knowledge_sentences("Alice bought new running shoes.", names) != []
    assert knowledge_sentences("Art can be a mood-booster.", names) == []
    # Text whose "I" was not resolved to a name is about its speaker; an exclamation is not.
    assert knowledge_sentences("I bought new running shoes.") == ["I bought new running shoes."]
    assert knowledge_sentences("I love it so much!") == []
    assert knowledge_sentences("My back hurts after the long drive.") != []
    assert knowledge_sentences("Dana moved to the U.S. last year.", names) != []
