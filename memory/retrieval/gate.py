"""Whether a prompt asks for anything a memory could answer.

Fusion normalises each route's scores per query, so the best candidates of any prompt
pass the retrieval threshold: "thanks!", "lol" or "ok" each put about 1,000 tokens of a
LoCoMo user's notes into /v1/context's block (benchmarks/README.md, session 21). An
absolute similarity floor does not tell them apart: with all-MiniLM-L6-v2, chit-chat came
within 0.44 of LoCoMo's chatty notes, while "What music do I like?" reached only 0.24 of
"Alice's favourite band is Radiohead". The write path already knows which sentences carry
no information (`is_filler`: greetings, thanks, reactions, addressee names, function
words); a prompt made only of such sentences has nothing to look up either, and
/v1/context answers it with an empty block. None of LoCoMo's 1,536 questions is one.
"""

from __future__ import annotations

from memory.episodes.extraction import is_filler
from memory.retrieval.text import normalise, split_sentences, word_set

# Said to an agent, these steer the task at hand rather than ask about the user: "Thank
# you so much!", "perfect", "continue", "next", "great, go ahead", "try again". The write
# path keeps them, since in a captured turn they may be part of what was said.
PROMPT_FILLER_WORDS = word_set(
    """
    much perfect excellent brilliant superb continue next proceed ahead resume try retry
    again carry more
    """
)


def asks_anything(prompt: str) -> bool:
    """False when every sentence of `prompt` is filler, the write path's or one of
    PROMPT_FILLER_WORDS (an empty prompt asks nothing)."""
    return any(
        not is_filler(sentence, also=PROMPT_FILLER_WORDS)
        for line in normalise(prompt).splitlines()
        for sentence in split_sentences(line)
    )
