"""Deterministic fact extraction (no LLM): one episode (a captured turn) -> facts.

Invariants:
- A turn with at least one content word (a non-stopword token) or an image caption
  always yields at least one fact: filtering may strip greetings and fillers, never a
  turn's information. Turns with neither ("Thanks!", "You too!") yield no fact; the
  episode itself stays stored.
- Facts keep the turn's speaker and occurred_at (the session date) unchanged.
- With the default `max_facts_per_episode=1` a turn becomes exactly one fact: per-turn
  notes keep a turn's evidence together for retrieval (see retrieval-notes.md).
- Splitting (max_facts_per_episode > 1, contents over ~600 chars) never drops text: the
  chunks, joined, hold every kept sentence in order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.episodes.resolve import resolve_first_person
from memory.language import looks_english
from memory.retrieval.text import (
    content_tokens,
    normalise,
    split_sentences,
    tokenize,
    word_set,
)

__all__ = [
    "CHUNK_CHARS",
    "FILLER_WORDS",
    "SPLIT_THRESHOLD_CHARS",
    "ExtractedFact",
    "Unit",
    "chunk_units",
    "clean_sentences",
    "clean_units",
    "extract_facts",
    "is_filler",
    "join_units",
    "resolve_first_person",
]

SPLIT_THRESHOLD_CHARS = 600
CHUNK_CHARS = 500
_CONVERSATIONAL_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """One fact. `text` is cleaned and first-person resolved; `original` is the raw
    turn (or, when split, the raw chunk it came from), for provenance and display."""

    text: str
    original: str
    speaker: str | None
    occurred_at: datetime
    image_caption: str | None = None
    part: int = 0  # position of this chunk within its episode (0 when not split)


# Words that carry no fact on their own: greetings, thanks, reactions, agreement.
FILLER_WORDS = word_set(
    """
    hi hey hello hiya heya yo howdy greetings thanks thank thx ty cheers bye goodbye cya
    later lol lmao rofl haha hahaha hehe heh ha ok okay kk yeah yea yep yup yes no nope
    sure cool nice great awesome wow whoa woah oh ooh aw aww omg yay woohoo hooray congrats
    congratulations amazing wonderful fantastic lovely sweet neat right indeed absolutely
    definitely totally exactly agreed true alright hmm um uh good morning afternoon evening
    night welcome glad sounds hear see soon talk care take meet pleasure problem worries
    thing go way keep luck well done same too sorry bet course cute fun love incredible
    """
)
# Words after which a capitalised word is the addressee ("Thanks, Mel!", "Hey John!").
_VOCATIVE_TRIGGERS = word_set(
    """
    hi hey hello hiya heya yo howdy thanks thank cheers bye goodbye congrats congratulations
    wow whoa oh aw aww omg yay woohoo dear morning evening night yeah yep yup yes sure
    okay ok cool great awesome nice amazing sorry
    """
)
_WORD_RE = re.compile(r"[\w']+")
_EMOJI_ONLY_RE = re.compile(r"^[\W_]*$")


def _is_name(word: str) -> bool:
    return word[:1].isupper() and word != "I" and not word.isupper()


def _vocative_positions(text: str, spans: list[tuple[int, int]]) -> set[int]:
    """Indices of addressee names ("Hey Mel!", "Thanks, Maria.", "cool, Caroline!").

    A run of capitalised words is an addressee when it follows a greeting-like word or a
    comma AND is followed by punctuation or the end: "Paris in June" is not one.
    """
    found: set[int] = set()
    i = 1
    while i < len(spans):
        j = i
        while j < len(spans) and _is_name(text[spans[j][0] : spans[j][1]]):
            j += 1
        if j > i:
            before = text[spans[i - 1][0] : spans[i - 1][1]].casefold()
            gap_before = text[spans[i - 1][1] : spans[i][0]]
            after = text[spans[j - 1][1] : spans[j][0] if j < len(spans) else len(text)]
            led = before in _VOCATIVE_TRIGGERS or "," in gap_before
            if led and (j == len(spans) or re.search(r"[,.!?;:]", after)):
                found.update(range(i, j))
        i = j + 1
    return found


def is_filler(sentence: str, *, also: frozenset[str] = frozenset()) -> bool:
    """True when a sentence holds only greetings, thanks, reactions, addressee names and
    function words (e.g. "Hey Mel!", "Wow, that's cool, Caroline!", "Thanks!"), or words
    in `also` (a caller's own fillers)."""
    text = normalise(sentence)
    spans = [m.span() for m in _WORD_RE.finditer(text)]
    if not spans:
        return bool(_EMOJI_ONLY_RE.match(text))
    vocatives = _vocative_positions(text, spans)
    rest = [text[a:b].casefold() for k, (a, b) in enumerate(spans) if k not in vocatives]
    return all(w in FILLER_WORDS or w in also or not content_tokens(w) for w in rest)


def named_words(sentence: str, known: frozenset[str] = frozenset()) -> list[str]:
    """The words of a sentence that name someone or something, addressees excepted ("Wow,
    Caroline, that's awesome!"): capitalised words after the first (a sentence's first word
    is capitalised anyway), acronyms ("LGBTQ"), and any word of `known` (names, such as
    the speakers', wherever they stand; "Melanie's" counts as "Melanie")."""
    text = normalise(sentence)
    spans = [m.span() for m in _WORD_RE.finditer(text)]
    vocatives = _vocative_positions(text, spans)
    named = []
    for k, (a, b) in enumerate(spans):
        word = text[a:b]
        if k in vocatives:
            continue
        bare = re.sub(r"'s$", "", word)
        acronym = len(bare) >= 2 and bare.isupper() and bare.isalpha() and bare not in _CHAT_CAPS
        if bare in known or acronym or (k and _is_name(word)):
            named.append(word)
    return named


_CHAT_CAPS = frozenset({"OK", "LOL", "OMG", "BTW", "TBH", "IMO", "IDK", "BRB", "TTYL", "ASAP"})


Unit = tuple[int, str]  # (line number, sentence): line breaks survive cleaning


def _is_fence(line: str) -> bool:
    return line.lstrip().startswith("```")


def _units(content: str) -> tuple[list[Unit], set[int]]:
    """The sentences of each line, and the numbers of the lines of fenced code blocks:
    those are one unit each, as written (indentation and blank lines kept)."""
    units: list[Unit] = []
    code: set[int] = set()
    in_code = False
    for n, line in enumerate(normalise(content).splitlines()):
        fence = _is_fence(line)
        if in_code or fence:
            code.add(n)
            units.append((n, line.rstrip()))
        else:
            units.extend((n, sentence) for sentence in split_sentences(line))
        in_code = in_code != fence
    return units, code


def clean_units(content: str, *, conversational: bool = True) -> list[Unit]:
    """The turn's sentences minus fillers (chat roles only; code blocks are kept whole);
    the whole turn when every sentence is filler but the turn has a content word, so
    nothing informative is lost."""
    units, code = _units(content)
    if not conversational:
        return units if tokenize(content) else []  # tool output is kept as written
    kept = [u for u in units if u[0] in code or not is_filler(u[1])]
    if kept:
        return kept
    return units if content_tokens(content) else []


def clean_sentences(content: str) -> list[str]:
    """`clean_units` of a chat turn, as plain sentences."""
    return [sentence for _, sentence in clean_units(content)]


def join_units(units: list[Unit]) -> str:
    """Sentences of one line joined by spaces, lines by newlines."""
    out: list[str] = []
    for i, (line, sentence) in enumerate(units):
        if i:
            out.append("\n" if line != units[i - 1][0] else " ")
        out.append(sentence)
    return "".join(out)


def _split_long(unit: Unit, limit: int) -> list[Unit]:
    """Break an over-long sentence at word boundaries into pieces of at most `limit`."""
    pieces: list[str] = []
    current = ""
    for word in unit[1].split():
        if current and len(current) + 1 + len(word) > limit:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [(unit[0], p) for p in [*pieces, current] if p]


def _pack(units: list[Unit], limit: int) -> list[list[Unit]]:
    """Greedy packing of sentences into chunks of at most `limit` chars (where possible)."""
    chunks: list[list[Unit]] = []
    current: list[Unit] = []
    size = 0
    for unit in units:
        for piece in _split_long(unit, limit) if len(unit[1]) > limit else [unit]:
            if current and size + 1 + len(piece[1]) > limit:
                chunks.append(current)
                current, size = [], 0
            size += len(piece[1]) + (1 if current else 0)
            current.append(piece)
    return [*chunks, current] if current else chunks


def _blocks(units: list[Unit]) -> list[list[Unit]]:
    """The units grouped into paragraphs (a skipped line number is a blank line) and
    fenced code blocks (from a ``` line to the next, blank lines inside included)."""
    blocks: list[list[Unit]] = []
    current: list[Unit] = []
    in_code = False
    for unit in units:
        fence = _is_fence(unit[1])
        gap = bool(current) and unit[0] > current[-1][0] + 1
        if current and not in_code and (gap or fence):
            blocks.append(current)
            current = []
        current.append(unit)
        if fence:
            in_code = not in_code
            if not in_code:  # the closing fence ends the block
                blocks.append(current)
                current = []
    return [*blocks, current] if current else blocks


def _pack_blocks(blocks: list[list[Unit]], limit: int) -> list[list[Unit]]:
    """Whole paragraphs and code blocks packed into chunks of at most `limit` chars; a
    block longer than that alone is packed by its sentences and lines (`_pack`)."""
    chunks: list[list[Unit]] = []
    current: list[Unit] = []
    size = 0
    for block in blocks:
        block_size = sum(len(text) + 1 for _, text in block)
        if current and size + block_size > limit:
            chunks.append(current)
            current, size = [], 0
        if block_size > limit:
            chunks.extend(_pack(block, limit))
            continue
        current.extend(block)
        size += block_size
    return [*chunks, current] if current else chunks


def chunk_units(units: list[Unit], max_chunks: int) -> list[str]:
    """At most `max_chunks` chunks of ~CHUNK_CHARS, keeping every sentence in order and,
    where they fit, paragraphs and fenced code blocks whole.

    The limit grows until the chunks fit in `max_chunks`, so nothing is ever dropped.
    """
    total = sum(len(s) + 1 for _, s in units)
    if max_chunks <= 1 or total <= SPLIT_THRESHOLD_CHARS:
        return [join_units(units)] if units else []
    limit = max(CHUNK_CHARS, math.ceil(total / max_chunks))
    blocks = _blocks(units)
    chunks = _pack_blocks(blocks, limit)
    while len(chunks) > max_chunks:
        limit = math.ceil(limit * 1.25)
        chunks = _pack_blocks(blocks, limit)
    return [join_units(chunk) for chunk in chunks]


def _caption(metadata: Mapping[str, Any]) -> str | None:
    caption = metadata.get("blip_caption") or metadata.get("image_caption")
    if isinstance(caption, str) and caption.strip():
        return " ".join(caption.split())
    return None


def extract_facts(
    content: str,
    *,
    role: str,
    speaker: str | None,
    occurred_at: datetime,
    metadata: Mapping[str, Any],
    max_facts_per_episode: int = 1,
    as_written: bool = False,
) -> list[ExtractedFact]:
    """Facts of one episode, in order (see the module invariants).

    Chat roles (user, assistant) get the filler filter; an English user turn whose
    `speaker` is known, first-person resolution ("I love hiking" by Melanie -> "Melanie
    loves hiking"; memory.language.looks_english).
    Tool and system contents, and anything `as_written` (explicit writes), are kept as
    written. An image caption in `metadata`
    (`blip_caption` or `image_caption`) is appended as "[image: …]" to the last fact.
    """
    if max_facts_per_episode < 1:
        raise ValueError("max_facts_per_episode must be at least 1")
    # An explicit write is stored as given: no filler filter, no first-person rewrite.
    conversational = role in _CONVERSATIONAL_ROLES and not as_written
    caption = _caption(metadata)
    units = clean_units(content or "", conversational=conversational)
    if not units and caption is None:
        return []
    chunks = chunk_units(units, max_facts_per_episode) or [""]
    facts: list[ExtractedFact] = []
    for part, chunk in enumerate(chunks):
        # Only a person's own "I" is theirs to resolve: an assistant's "I" and "your" are
        # kept as said ("I do not know your dog's name"), attributed by the note's role.
        # The rewrite knows English only: "nunca me sugieras" keeps its Spanish "me".
        resolve = conversational and speaker and role == "user" and looks_english(chunk)
        text = resolve_first_person(chunk, speaker) if resolve else chunk
        if caption is not None and part == len(chunks) - 1:
            text = f"{text} [image: {caption}]".strip()
        original = content.strip() if len(chunks) == 1 else chunk
        facts.append(
            ExtractedFact(
                text=text,
                original=original,
                speaker=speaker,
                occurred_at=occurred_at,
                image_caption=caption if part == len(chunks) - 1 else None,
                part=part,
            )
        )
    return facts
