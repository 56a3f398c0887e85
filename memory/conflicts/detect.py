"""Classifying a pair of similar notes: compatible, contradictory, subsumes or ambiguous.

Heuristics (no LLM). A conflict is raised only on specific evidence: the same claim
about the same subject with a different value. Checked in this order:

1. Not the same subject: compatible. Different known speakers, texts starting with
   different names ("Bob ..." / "Carol's ..."), or no shared topic word (content words
   other than names) unless the texts use opposite words ("Bob is married" / "Bob is
   divorced").
2. Nothing stated: a text with no statement sentence (only questions, greetings,
   thanks or reactions) contradicts nothing: compatible, not stored.
3. The same claim said both ways, by a pair of statement sentences whose topic words
   (content words other than names) are the same once negations, dates, numbers and
   opposite words are set aside (its `core`): negated in one only ("I eat meat" / "I
   don't eat meat", "no longer"), or, cores equal but for one word, a different date or
   number, or opposite words (love/hate, always/never, ...): contradictory, the reason
   naming the claim.
4. One text's content words all appear in the other, which adds more: subsumes (a
   refinement, recorded but not an open conflict).
5. Exactly one short differing span in otherwise equal wording: words of one sentiment
   are compatible ("love" / "really enjoy"); a value slot after a copula, a
   place/employer/name preposition, a capitalised value or a colour is contradictory
   ("lives in Paris" / "lives in Berlin"); any other single swap is ambiguous (a synonym or a
   second preference: "likes cats" / "likes dogs").
6. Anything else (paraphrase, different facts on one topic, small talk): compatible.

`classify_with_llm` asks an OpenAI-compatible model for the same four classes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from memory.clients.llm import LlmClient
from memory.conflicts.vocabulary import (
    COLOURS,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    OPPOSITES,
    SAME_SENTIMENT,
    VALUE_MARKERS,
    WEEKDAYS,
)
from memory.episodes.extraction import is_filler
from memory.notes.rules import statement_sentences
from memory.retrieval.text import STOPWORDS, stem

Classification = Literal["compatible", "contradictory", "subsumes", "ambiguous"]


@dataclass(frozen=True)
class Verdict:
    classification: Classification
    reason: str
    # For "subsumes": which side holds the broader statement ("a" or "b").
    broader: str | None = None
    method: str = "heuristic"
    # False when the notes are not about one subject: such pairs are not stored.
    related: bool = True


_APOSTROPHE = "\u2019"
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)?(?:[.:/-]\d+)*")
_ISO_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_YEAR_RE = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")
_MONTH_DAY_RE = re.compile(
    r"\b(" + "|".join(m.capitalize() for m in MONTHS) + r")\b(?:\s+(\d{1,2})(?:st|nd|rd|th)?)?"
    r"|\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?("
    + "|".join(m.capitalize() for m in MONTHS)
    + r")\b"
)
MAX_SLOT_TOKENS = 3
OPPOSITE_WORDS = frozenset(word for pair in OPPOSITES for word in pair)


def tokens(text: str) -> list[str]:
    return [t.replace(_APOSTROPHE, "'") for t in _TOKEN_RE.findall(text)]


def _plain(word: str) -> str:
    low = word.lower()
    return low[:-2] if low.endswith("'s") else low


def _content(words: list[str]) -> set[str]:
    """Content words, lowercased, possessive 's dropped, negations excluded."""
    plain = {_plain(w) for w in words}
    return {w for w in plain if w not in STOPWORDS and w not in NEGATIONS}


def names(words: list[str]) -> set[str]:
    """Capitalised words that are not function words, months or weekdays: who/what."""
    return {
        _plain(w)
        for w in words
        if w[:1].isupper()
        and _plain(w) not in STOPWORDS
        and _plain(w) not in MONTHS
        and _plain(w) not in WEEKDAYS
    }


def negated(words: list[str]) -> bool:
    lowered = [w.lower() for w in words]
    return any(w in NEGATIONS for w in lowered) or "no longer" in " ".join(lowered)


def dates(text: str) -> set[str]:
    found = set(_ISO_DATE_RE.findall(text)) | set(_YEAR_RE.findall(text))
    for m in _MONTH_DAY_RE.finditer(text):
        month = (m.group(1) or m.group(4)).lower()
        day = m.group(2) or m.group(3)
        found.add(f"{month} {int(day)}" if day else month)
    found |= {w.lower() for w in tokens(text) if w.lower() in WEEKDAYS and w[0].isupper()}
    return found


def numbers(text: str) -> set[str]:
    """Quantities mentioned, dates excluded (digits normalised, number words as digits)."""
    without_dates = _MONTH_DAY_RE.sub(" ", _ISO_DATE_RE.sub(" ", text))
    without_dates = _YEAR_RE.sub(" ", without_dates)
    out: set[str] = set()
    for word in tokens(without_dates):
        low = word.lower()
        if re.fullmatch(r"\d+(?:[.:]\d+)?", low):
            out.add(low.lstrip("0") or "0")
        elif low in NUMBER_WORDS:
            out.add(str(NUMBER_WORDS[low]))
    return out


def _opposite(a: set[str], b: set[str]) -> tuple[str, str] | None:
    for x, y in OPPOSITES:
        if (x in a and y in b and y not in a and x not in b) or (
            y in a and x in b and x not in a and y not in b
        ):
            return (x, y)
    return None


def _single_swap(a: list[str], b: list[str]) -> tuple[list[str], list[str], str] | None:
    """The one differing span (a side, b side, word before it), if the rest is equal.

    Case-insensitive; strip the common prefix and suffix: what is left on each side must
    be non-empty, share no word (a shared word would split the edit in two) and be at
    most MAX_SLOT_TOKENS long. Without repeated words this is exactly difflib's single
    "replace" opcode, at a fraction of its cost (the test holds the two equal).
    """
    if abs(len(a) - len(b)) > MAX_SLOT_TOKENS:
        return None
    low_a, low_b = [w.lower() for w in a], [w.lower() for w in b]
    shortest = min(len(a), len(b))
    start = 0
    while start < shortest and low_a[start] == low_b[start]:
        start += 1
    end = 0
    while end < shortest - start and low_a[-1 - end] == low_b[-1 - end]:
        end += 1
    mid_a, mid_b = low_a[start : len(a) - end], low_b[start : len(b) - end]
    if not mid_a or not mid_b or len(mid_a) > MAX_SLOT_TOKENS or len(mid_b) > MAX_SLOT_TOKENS:
        return None
    if set(mid_a) & set(mid_b):
        return None
    before = low_a[start - 1] if start > 0 else ""
    return a[start : len(a) - end], b[start : len(b) - end], before


def _leading_name(words: list[str]) -> str | None:
    """The name a text starts with ("Ann ...", "Ann's ..."), the usual grammatical subject."""
    return next(iter(names(words[:1])), None)


@dataclass(frozen=True)
class Features:
    """What the rules read from one text, computed once per text (a note is in many pairs)."""

    words: tuple[str, ...]
    content: frozenset[str]
    topic: frozenset[str]  # content words other than names
    lead: str | None
    negated: bool
    dates: frozenset[str]
    numbers: frozenset[str]


@lru_cache(maxsize=65536)
def features(text: str) -> Features:
    words = tokens(text)
    content = _content(words)
    return Features(
        words=tuple(words),
        content=frozenset(content),
        topic=frozenset(content - names(words)),
        lead=_leading_name(words),
        negated=negated(words),
        dates=frozenset(dates(text)),
        numbers=frozenset(numbers(text)),
    )


def _different_subject(a: Features, b: Features) -> str | None:
    """Why the two texts are not about one subject, or None when they are."""
    if a.lead and b.lead and a.lead != b.lead:
        return f"different subjects ({a.lead} vs {b.lead})"
    if not a.topic & b.topic and not _opposite(set(a.content), set(b.content)):
        return "no shared subject words"
    return None


def _value_verdict(words_a: list[str], words_b: list[str]) -> Verdict | None:
    """The verdict for exactly one short differing span, if that is all that differs."""
    swap = _single_swap(words_a, words_b)
    if swap is None:
        return None
    left, right, before = swap
    shown = f"{' '.join(left)} vs {' '.join(right)}"
    swapped = {w.lower() for w in left + right}
    if any(swapped <= group for group in SAME_SENTIMENT):
        return Verdict("compatible", f"same sentiment in other words ({shown})")
    valued = (
        before in VALUE_MARKERS or any(w[:1].isupper() for w in left + right) or swapped <= COLOURS
    )
    if valued:
        return Verdict("contradictory", f"different values ({shown})")
    return Verdict("ambiguous", f"one differing detail ({shown})")


def classify(
    text_a: str, text_b: str, *, speaker_a: str | None = None, speaker_b: str | None = None
) -> Verdict:
    """The heuristic verdict for two notes' texts (see the module docstring for the order)."""
    if speaker_a and speaker_b and speaker_a.casefold() != speaker_b.casefold():
        return Verdict(
            "compatible", f"different speakers ({speaker_a}, {speaker_b})", related=False
        )
    a, b = features(text_a), features(text_b)
    unrelated = _different_subject(a, b)
    if unrelated:
        return Verdict("compatible", unrelated, related=False)
    if not claims(text_a) or not claims(text_b):
        return Verdict("compatible", "nothing stated to compare", related=False)
    for claim_a in claims(text_a):
        for claim_b in claims(text_b):
            verdict = _claim_verdict(features(claim_a), features(claim_b))
            if verdict is not None:
                return verdict
    if a.content < b.content or b.content < a.content:
        broader = "b" if a.content < b.content else "a"
        return Verdict("subsumes", "one statement contains the other and adds detail", broader)
    return _value_verdict(list(a.words), list(b.words)) or Verdict(
        "compatible", "paraphrase or different facts about one subject"
    )


@lru_cache(maxsize=65536)
def claims(text: str) -> tuple[str, ...]:
    """The sentences of `text` that state something: not questions, not small talk."""
    return tuple(s for s in statement_sentences(text) if not is_filler(s))


def _core(f: Features) -> frozenset[str]:
    """A claim's topic words (content words other than names), stemmed, without
    negations, dates, numbers and the words of an opposite pair: what must match for two
    sentences to be one claim about their (already shared) subject."""
    return frozenset(
        stem(w)
        for w in f.topic
        if w not in OPPOSITE_WORDS
        and w not in MONTHS
        and w not in WEEKDAYS
        and w not in NUMBER_WORDS
        and w != "longer"  # "no longer": the negation's second word
        and not any(ch.isdigit() for ch in w)
    )


def _claim_verdict(a: Features, b: Features) -> Verdict | None:
    """Contradictory when two sentences are one claim said with a different polarity
    (their cores equal), date or number (cores equal but for one word), or opposite word."""
    core_a, core_b = _core(a), _core(b)
    shared = core_a & core_b
    if not shared or len(core_a ^ core_b) > 1:
        return None
    claim = ", ".join(sorted(shared))
    if core_a == core_b and a.negated != b.negated:
        return Verdict("contradictory", f"one statement negates the other ({claim})")
    for label, found_a, found_b in (("dates", a.dates, b.dates), ("numbers", a.numbers, b.numbers)):
        if found_a and found_b and found_a != found_b:
            shown = f"{_show(found_a)} vs {_show(found_b)}"
            return Verdict("contradictory", f"{label} differ ({shown}; {claim})")
    opposite = _opposite(set(a.content), set(b.content))
    if opposite:
        return Verdict("contradictory", f"opposite words ({opposite[0]} / {opposite[1]}; {claim})")
    return None


def _show(values: set[str] | frozenset[str]) -> str:
    return ", ".join(sorted(values))


LLM_SCHEMA = {
    "type": "object",
    "properties": {
        "classification": {
            "type": "string",
            "enum": ["compatible", "contradictory", "subsumes", "ambiguous"],
        },
        "broader": {"type": "string", "enum": ["a", "b", "none"]},
        "reason": {"type": "string"},
    },
    "required": ["classification", "reason"],
}
LLM_PROMPT = (
    "Two memories about one person may disagree. Classify the pair: 'contradictory' if "
    "both cannot be true at the same time, 'subsumes' if one says everything the other "
    "says and more (name the broader one in 'broader'), 'compatible' if both can be true "
    "together, 'ambiguous' if you cannot tell. Give a one-sentence reason."
)


def classify_with_llm(llm: LlmClient, text_a: str, text_b: str) -> Verdict:
    answer = llm.complete_json(
        LLM_PROMPT, f"Memory A: {text_a}\nMemory B: {text_b}", LLM_SCHEMA, name="conflict"
    )
    broader = answer.get("broader")
    return Verdict(
        answer["classification"],
        str(answer.get("reason") or "")[:500],
        broader if broader in ("a", "b") and answer["classification"] == "subsumes" else None,
        "llm",
    )
