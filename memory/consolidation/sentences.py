"""Which sentences of a conversation are knowledge: what a knowledge note may be made of.

A knowledge note states what its memories establish; a chat is mostly the talk around
that ("Wow, what a fun moment!", "Did you see that band?", "Thanks, Caroline!"). Without
an LLM the note is extractive, so the talk is filtered out sentence by sentence.

Invariants: a knowledge sentence is a statement (no question), not filler (greetings,
thanks, reactions: `memory.episodes.extraction.is_filler`), and not addressed to the other
party ("you", "your": a summary cannot say who that is), and specific: it names someone
or something (not the addressee) or holds a number. The write path states the user's
own words with their name ("Caroline went to a support group"), so a fact keeps one, while
the talk around it does not ("That bowl is gorgeous!", "Life's tough but it's worth
it.", "Long time no talk."); a statement in the first person not resolved to a name ("I
ran 10 km") is about its speaker and counts too, unless it is an exclamation. A note
without any knowledge sentence is chatter, and takes no part in consolidation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from memory.episodes.extraction import is_filler, named_words
from memory.retrieval.text import split_sentences

# Not "u": "the U.S." would read as addressed to someone.
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself|you're|you've|you'll|ya)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'll|I'd|[Mm]e|[Mm]y|[Mm]ine)\b")
# A capitalised word starting a sentence and followed by a lower-case word: "Alice ran",
# not "Ah, ..." or "Phew!".
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+(?:'s)?)(?=\s+[a-z])")
_LOWER_WORD = re.compile(r"\b[a-z][a-z]+\b")


class Spoken(Protocol):
    speaker: str | None
    content: str


def known_names(notes: Iterable[Spoken]) -> frozenset[str]:
    """Words that are names wherever they stand, even first in a sentence: the notes'
    speakers, and capitalised words that start at least two sentences and are never
    written in lower case ("Alice" in "Alice ran 10 km.", not "Art" when "art" occurs)."""
    speakers: set[str] = set()
    starts: Counter[str] = Counter()
    lower: set[str] = set()
    for note in notes:
        if note.speaker:
            speakers.add(note.speaker)
        starts.update(_possessive(m) for m in _SENTENCE_START.findall(note.content))
        lower.update(_LOWER_WORD.findall(note.content))
    learned = {
        word
        for word, count in starts.items()
        if count >= 2 and word.casefold() not in lower and not is_filler(word)
    }
    return frozenset(speakers | learned)


def knowledge_sentences(text: str, names: frozenset[str] = frozenset()) -> list[str]:
    """The sentences of `text` a knowledge note may state (module invariants), in order;
    `names` are names known to be names wherever they stand (the speakers')."""
    return [s.strip() for s in split_sentences(text) if _is_knowledge(s.strip(), names)]


def is_chatter(text: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether `text` holds no knowledge sentence at all."""
    return not any(_is_knowledge(s.strip(), names) for s in split_sentences(text))


def _is_knowledge(sentence: str, names: frozenset[str]) -> bool:
    # The cheap tests first: the sleep cycle asks this of every sentence of every
    # episodic note of the user.
    if not sentence or sentence.endswith("?") or _SECOND_PERSON.search(sentence):
        return False
    # A name (not an addressee) or a number is never filler.
    if any(ch.isdigit() for ch in sentence) or _names_something(sentence, names):
        return True
    if sentence.endswith("!"):
        return False
    # Text whose first person was not resolved to a name ("I ran 10 km") is about its
    # speaker all the same.
    return bool(_FIRST_PERSON.search(sentence)) and not is_filler(sentence)


def _names_something(sentence: str, names: frozenset[str]) -> bool:
    head, _, rest = sentence.partition(" ")
    if _possessive(head.strip(",.!;:")) in names:
        if not head.endswith(","):
            return True
        sentence = rest  # "Caroline, that's great!": the name is the addressee
    if not any(ch.isupper() for ch in sentence[1:]):
        return False
    return bool(named_words(sentence, names))


def _possessive(word: str) -> str:
    return word[:-2] if word.endswith("'s") else word
