"""Whose words a question asks about: the search's speaker prior.

Invariants, in order (the first that applies decides):
- A question that names exactly one of its candidates' speakers ("When did Caroline go
  to the group?") asks about that speaker's words.
- A question about what the assistant said ("the video you recommended", "your
  suggestion") asks about notes of assistant origin.
- A question in the first person ("Which book did I finish first?") asks about the
  user's own words, when the user's name is known (`asker`: only a name that clearly is
  the user's, `memory.retrieval.first_person`). A log of two people talking, such as
  LoCoMo, has no such name, and its questions get no prior from this rule.
- Any other question: no prior.

Why the first person: in an agent's sessions the assistant's long replies are cut into
many passages that share the question's words ("books like The Nightingale ..."), while
what the user did is said once, in the user's own turn. On the LongMemEval sample the
prior moved R@5 / R@10 from .763 / .893 to .832 / .918 through the API
(`benchmarks/results/longmemeval-2026-12-07d-*.json`); no LoCoMo question has a first
person or asks about the assistant's words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from memory.retrieval.first_person import speaks_in_first_person
from memory.retrieval.rows import ScoredNote

_PAST = (
    "recommended|suggested|mentioned|said|told|gave|listed|shared|wrote|proposed|provided|"
    "described|explained|named|showed|answered"
)
_BASE = (
    "recommend|suggest|mention|say|tell|give|list|share|write|propose|provide|describe|"
    "explain|name|show|answer"
)
ASSISTANT_WORDS = re.compile(
    # "the video you recommended", "did you just suggest", "your advice"
    rf"\byou\s+(?:\w+\s+){{0,2}}?(?:{_PAST})\b"
    rf"|\bdid\s+you\s+(?:\w+\s+){{0,2}}?(?:{_BASE})\b"
    r"|\byour\s+(?:recommendations?|suggestions?|advice|answers?|reply|replies|list)\b",
    re.IGNORECASE,
)

SpeakerPrior = Callable[[ScoredNote], float]


def mentioned_speaker(query: str, speakers: set[str]) -> str | None:
    """The one participant a question names, if it names exactly one."""
    named = {s for s in speakers if s and re.search(rf"\b{re.escape(s)}\b", query, re.IGNORECASE)}
    return next(iter(named)) if len(named) == 1 else None


def asks_about_assistant(query: str) -> bool:
    """Whether the question asks what the assistant itself said or recommended."""
    return ASSISTANT_WORDS.search(query) is not None


def speaker_prior(
    query: str, notes: Iterable[ScoredNote], asker: str | None
) -> SpeakerPrior | None:
    """Each candidate's share of the speaker prior for `query` (module invariants): 1 for
    the named participant's notes; for the assistant's or the user's own words, 0 for
    those and -1 for the others. Relevance is capped at 1, so lifting nearly every note
    (a user's own, when the user said nearly all of them) would squeeze the best together;
    the other speakers' notes are lowered instead. None: no prior."""
    candidates = list(notes)
    named = mentioned_speaker(query, {n.speaker for n in candidates if n.speaker})
    if named is not None:
        return lambda note: 1.0 if note.speaker == named else 0.0
    if asks_about_assistant(query):
        return lambda note: 0.0 if note.origin == "assistant" else -1.0
    if asker and speaks_in_first_person(query) and any(n.speaker == asker for n in candidates):
        return lambda note: 0.0 if note.speaker == asker else -1.0
    return None
