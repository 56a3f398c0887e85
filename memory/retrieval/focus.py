"""The part of a query or prompt the read path ranks by: its ask, not what was pasted before.

An agent's prompt often carries a log, a document or an earlier chat before the question.
Ranked as a whole, the pasted words outnumber the question's in the lexical routes and the
embedder keeps only the first word pieces, so the question is lost; and the lexical
routes' cost grows with the number of terms. On LoCoMo with 3,000 pasted characters
before each question, /v1/context's recall fell from .858 to .228 and every context was
cut short by its 150 ms budget (`benchmarks/results/locomo-long-s21-whole.json`).

Invariants:
- A text of at most `max_chars` characters (after stripping) is its own focus.
- Otherwise the focus is the text's trailing whole paragraphs (split at blank lines) that
  fit in `max_chars` together, at least the last one; a last paragraph longer than
  `max_chars` gives its tail, from a word's start.
- When that holds no content word ("Why?", "And then?"), the tail of the
  paragraph before it fills the rest of `max_chars`.
- The focus is never longer than `max_chars`, and never empty for a text that is not.
"""

from __future__ import annotations

import re

from memory.retrieval.text import content_tokens

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r]*\n")
_GLUE = "\n\n"


def focus_query(text: str, max_chars: int) -> str:
    """See the module invariants."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    last = paragraphs.pop()
    if len(last) > max_chars:
        return text_tail(last, max_chars)
    kept = [last]
    while paragraphs and len(_GLUE.join([paragraphs[-1], *kept])) <= max_chars:
        kept.insert(0, paragraphs.pop())
    focus = _GLUE.join(kept)
    room = max_chars - len(focus) - len(_GLUE)
    if paragraphs and room > 0 and not content_tokens(focus):
        before = text_tail(paragraphs[-1], room)
        focus = _GLUE.join([before, focus]) if before else focus
    return focus


def text_tail(text: str, max_chars: int) -> str:
    """The last `max_chars` characters of `text`, from a word's start when the cut falls
    inside one (a single token longer than that is cut where it must be)."""
    if len(text) <= max_chars:
        return text
    tail = text[-max_chars:]
    if not text[-max_chars - 1].isspace():
        space = next((i for i, ch in enumerate(tail) if ch.isspace()), -1)
        if 0 <= space < len(tail) - 1:
            tail = tail[space + 1 :]
    return tail.strip()
