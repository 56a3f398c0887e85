"""Who "I" is in a user's prompt, for the dense route.

The write path stores a user's "I love my dog" as "Alice loves Alice's dog"
(memory.episodes.resolve), so the user's own ask "Tell me about my dog" sits far from it
in all-MiniLM-L6-v2's space (cosine 0.21 to "Alice adopted a beagle called Biscuit in
2021."), while "Tell me about Alice's dog" sits near (0.62). The dense route therefore
embeds the prompt with its first person resolved the same way.

Invariants:
- Only the dense query changes; the lexical and sparse routes read the prompt as given
  (the user's name would match every note of theirs).
- "I" is resolved only to a name that clearly is the user's: the speaker of at least
  MIN_SHARE of a sample of the user's own notes (origin `user`). A group chat or a
  two-person log such as LoCoMo has no such name, and its prompts are left as they are.
- The name is read once per user per NAME_TTL_SECONDS in each process, from notes of the
  user, whatever the viewer may see: it only shapes the query vector, never an answer.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.episodes.resolve import resolve_first_person
from memory.language import looks_english
from memory.notes.models import Note

SAMPLE_NOTES = 200
MIN_SHARE = 0.8
NAME_TTL_SECONDS = 300.0
MAX_USERS = 10_000
# Resolving with a placeholder tells whether a prompt has a first person at all.
_PROBE = "\x00"

_names: OrderedDict[tuple[str, str], tuple[float, str | None]] = OrderedDict()
_lock = threading.Lock()


def speaks_in_first_person(query: str) -> bool:
    """Whether `query` has an "I", "me", "my", ... that the write path would resolve."""
    return looks_english(query) and resolve_first_person(query, _PROBE) != query


def user_name(*, session: Session, tenant_id: str, user_id: str) -> str | None:
    """The name the user's own words are stored under, if one clearly is (see the module
    invariants); cached per process."""
    key = (tenant_id, user_id)
    now = time.monotonic()
    with _lock:
        cached = _names.get(key)
    if cached is not None and now - cached[0] < NAME_TTL_SECONDS:
        return cached[1]
    sample = session.scalars(
        select(Note.speaker)
        .where(
            Note.tenant_id == tenant_id,
            Note.user_id == user_id,
            Note.status == "active",
            Note.origin == "user",
            Note.speaker.is_not(None),
        )
        .limit(SAMPLE_NOTES)
    ).all()
    name = _dominant(sample)
    with _lock:
        _names[key] = (now, name)
        _names.move_to_end(key)
        while len(_names) > MAX_USERS:
            _names.popitem(last=False)
    return name


def _dominant(speakers: list[str | None]) -> str | None:
    counts = Counter(s for s in speakers if s)
    if not counts:
        return None
    name, count = counts.most_common(1)[0]
    return name if count >= MIN_SHARE * sum(counts.values()) else None


def known_user_name(tenant_id: str, user_id: str) -> str | None:
    """The user's name as last read in this process (no statement): what the search that
    just ran resolved the prompt's first person to, if anything."""
    with _lock:
        cached = _names.get((tenant_id, user_id))
    return cached[1] if cached is not None else None


def dense_query(query: str, name: str | None) -> str:
    """The query the dense route embeds: its first person resolved to `name`."""
    return resolve_first_person(query, name) if name else query


def forget_user_names() -> None:
    """Read every user's name afresh (tests; a renamed user)."""
    with _lock:
        _names.clear()
