"""A prompt of fillers only asks nothing of memory; anything with a content word does."""

from __future__ import annotations

import pytest

from memory.retrieval.gate import asks_anything


@pytest.mark.parametrize(
    "prompt",
    ["thanks!", "ok", "lol", "Hey Mel!", "hmm", "Good morning!", "haha nice", "👍", "?", "",
     "Thanks!\nOk, sounds good."],
)  # fmt: skip
def test_fillers_alone_ask_nothing(prompt: str) -> None:
    assert not asks_anything(prompt)


@pytest.mark.parametrize(
    "prompt",
    ["Which antibiotics should I avoid?", "Biscuit?", "INC-4471", "run the tests",
     "Thanks! Where does my sister live?", "ok.\nWhat is next on my list?"],
)  # fmt: skip
def test_one_sentence_with_a_content_word_asks(prompt: str) -> None:
    assert asks_anything(prompt)
