"""Construct a note draft from one extracted fact (write-path stage 2, no LLM).

The rules that annotate a note (kind, domain, tags, keywords, importance) live in
memory.notes.rules and are re-exported here; this module assembles the draft.

Invariants:
- Deterministic: the same fact, arguments and settings give the same draft.
- Explicit caller choices (kind, domain, visibility, tags, pinned, ttl, importance) always
  win over the rules; invalid explicit values raise InvalidInputError.
- `index_text`, `window_text` and `embed_text` always start with "Speaker: content", so
  the lexical and dense routes see who said it; index and window texts end with the
  date words of `occurred_at` (retrieval-notes.md: speaker and date in the indexed text).
  A draft's window is its own line: the decide stage adds the neighbours that may flow
  into it (memory.notes.window), once their audience is known.
- Visibility = explicit, else settings.visibility.domain_rules[domain], else the default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memory.config import Settings
from memory.episodes.extraction import ExtractedFact
from memory.errors import InvalidInputError
from memory.notes.rules import (
    DOMAIN_LEXICON,
    MAX_KEYWORDS,
    MAX_RULE_TAGS,
    TAG_LEXICON,
    classify_domain,
    classify_kind,
    estimate_importance,
    extract_keywords,
    rule_tags,
    statement_sentences,
)
from memory.retrieval.text import content_tokens, date_terms, split_sentences, stem

__all__ = [
    "CONTEXT_CHARS",
    "DOMAIN_LEXICON",
    "EMBED_CONTENT_CHARS",
    "KINDS",
    "MAX_KEYWORDS",
    "MAX_RULE_TAGS",
    "TAG_LEXICON",
    "TTL_DURATIONS",
    "VISIBILITIES",
    "NoteDraft",
    "classify_domain",
    "classify_kind",
    "construct_note",
    "estimate_importance",
    "extract_keywords",
    "indexed_texts",
    "make_context",
    "rule_tags",
    "speaker_label",
    "ttl_expiry",
]

KINDS = ("stable", "preference", "episodic", "ephemeral", "decision", "knowledge")
VISIBILITIES = ("open", "scoped", "private", "user-only")
TTL_DURATIONS: dict[str, timedelta | None] = {
    "session": timedelta(days=1),
    "short": timedelta(days=14),
    "permanent": None,
}
CONTEXT_CHARS = 120
EMBED_CONTENT_CHARS = 900  # MiniLM truncates at 256 word pieces (~1,000 characters)


@dataclass(frozen=True, slots=True)
class NoteDraft:
    """A note ready for embedding and the decide stage. Sequences are tuples (immutable);
    convert with list() for ARRAY columns."""

    content: str
    keywords: tuple[str, ...]
    tags: tuple[str, ...]
    kind: str
    domain: str
    visibility: str
    importance: float
    context: str
    index_text: str
    window_text: str
    embed_text: str
    ttl_expires_at: datetime | None
    pinned: bool
    speaker: str | None
    role: str
    agent_id: str
    occurred_at: datetime


def speaker_label(speaker: str | None, role: str, agent_id: str) -> str:
    """Who said it, for indexed text: the speaker, else a role-based name."""
    if speaker and speaker.strip():
        return speaker.strip()
    return {"user": "User", "assistant": agent_id or "Assistant", "tool": "Tool"}.get(
        role, role.capitalize() or "Unknown"
    )


def make_context(label: str, content: str) -> str:
    """One-line gist (<= CONTEXT_CHARS): the speaker and the first statement."""
    statements = statement_sentences(content) or split_sentences(content) or [content]
    line = " ".join(f"{label}: {statements[0]}".split())
    if len(line) <= CONTEXT_CHARS:
        return line
    cut = line[: CONTEXT_CHARS - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:-") + "\u2026"


def _explicit_choice(explicit: Mapping[str, Any], key: str, allowed: Sequence[str]) -> str | None:
    value = explicit.get(key)
    if value is None:
        return None
    if value not in allowed:
        raise InvalidInputError(f"{key} must be one of {', '.join(allowed)}", field=key)
    return str(value)


def ttl_expiry(ttl: Any, occurred_at: datetime) -> datetime | None:
    """Expiry for an explicit ttl: session +1 day, short +14 days, permanent/None never."""
    if ttl is None:
        return None
    if ttl not in TTL_DURATIONS:
        raise InvalidInputError("ttl must be one of session, short, permanent", field="ttl")
    delta = TTL_DURATIONS[ttl]
    return None if delta is None else occurred_at + delta


def _explicit_importance(explicit: Mapping[str, Any]) -> float | None:
    value = explicit.get("importance")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError("importance must be a number in [0, 1]", field="importance")
    return float(value)


def _explicit_tags(explicit: Mapping[str, Any]) -> list[str]:
    tags = explicit.get("tags") or []
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise InvalidInputError("tags must be a list of strings", field="tags")
    return [t.strip() for t in tags if t.strip()]


def _dedup(items: Sequence[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    return tuple(x for x in items if not (x.casefold() in seen or seen.add(x.casefold())))


def indexed_texts(label: str, content: str, occurred_at: datetime) -> tuple[str, str, str]:
    """(index_text, window_text, embed_text): the own turn with the date words for the
    lexical routes (the window until the decide stage adds neighbours), and a short dated
    line to embed."""
    dated = date_terms(occurred_at)
    own = f"{label}: {content}"
    short_date = " ".join(dated.split()[:3])
    embed = f"{label}: {content[:EMBED_CONTENT_CHARS]} ({short_date})"
    return f"{own} {dated}", f"{own} {dated}", embed


def construct_note(
    fact: ExtractedFact,
    *,
    role: str,
    agent_id: str,
    explicit: Mapping[str, Any],
    settings: Settings,
) -> NoteDraft:
    """Build the note draft for one fact (see the module invariants)."""
    label = speaker_label(fact.speaker, role, agent_id)
    content = fact.text
    stems = [stem(t) for t in content_tokens(content)]
    kind = _explicit_choice(explicit, "kind", KINDS) or classify_kind(fact, role)
    domain = str(explicit.get("domain") or classify_domain(stems))
    visibility = (
        _explicit_choice(explicit, "visibility", VISIBILITIES)
        or settings.visibility.domain_rules.get(domain)
        or settings.visibility.default_visibility
    )
    pinned = bool(explicit.get("pinned", False))
    importance = _explicit_importance(explicit)
    if importance is None:
        importance = estimate_importance(content, kind, speaker=fact.speaker)
        importance = max(importance, 0.9) if pinned else importance
    index_text, window_text, embed_text = indexed_texts(label, content, fact.occurred_at)
    return NoteDraft(
        content=content,
        keywords=tuple(extract_keywords(content, exclude=[label])),
        tags=_dedup([*_explicit_tags(explicit), *rule_tags(stems, kind)]),
        kind=kind,
        domain=domain,
        visibility=visibility,
        importance=importance,
        context=make_context(label, content),
        index_text=index_text,
        window_text=window_text,
        embed_text=embed_text,
        ttl_expires_at=ttl_expiry(explicit.get("ttl"), fact.occurred_at),
        pinned=pinned,
        speaker=fact.speaker,
        role=role,
        agent_id=agent_id,
        occurred_at=fact.occurred_at,
    )
