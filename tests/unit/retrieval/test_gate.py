"""A prompt of fillers only asks nothing of memory; anything with a content word does."""

from __future__ import annotations

import pytest

from memory.retrieval.gate import PROMPT_FILLER_WORDS, asks_anything


@pytest.mark.parametrize(
    "prompt",
    ["thanks!", "ok", "lol", "Hey Mel!", "hmm", "Good morning!", "haha nice", "👍", "?", "",
     "Thanks!\nOk, sounds good.", "continue", "Thank you so much!", "great, go ahead",
     "try again", "perfect", "next", "Perfect, thanks! Continue."],
)  # fmt: skip
def test_fillers_alone_ask_nothing(prompt: str) -> None:
    assert not asks_anything(prompt)


@pytest.mark.parametrize(
    "prompt",
    ["Which antibiotics should I avoid?", "Biscuit?", "INC-4471", "run the tests",
     "Thanks! Where does my sister live?", "ok.\nWhat is next on my list?",
     "tell me more about Paris", "Try the Thai place again?"],
)  # fmt: skip
def test_one_sentence_with_a_content_word_asks(prompt: str) -> None:
    assert asks_anything(prompt)


def test_the_prompt_fillers_are_the_gates_own_and_the_write_path_keeps_them() -> None:
    from memory.episodes.extraction import is_filler

    # A captured "Perfect, thanks!" or "Continue." may be what was said: it stays a note.
    assert not is_filler("Perfect, thanks!") and not is_filler("Continue.")
    assert is_filler("Perfect, thanks!", also=PROMPT_FILLER_WORDS)
