"""What is worth remembering: the rules that keep commands, acknowledgements and echoes of
the service's own output out of memory (settings: `memory.episodes.settings`).

Invariants:
- The rules only ever skip a captured turn (source "capture"); explicit writes, promoted
  items and synced files are kept as their own paths decide. The episode is stored either
  way: a skipped turn is `done` with its rule's decision, and the journal says why.
- A rule never skips a turn that says something of its own: a command or acknowledgement
  with any other content word, or an echo that adds content words the echoed memories do
  not hold (memory.notes.decide.adds_information), is kept.
- Small talk made only of greetings, thanks and reactions needs no rule here: extraction
  finds no fact in it (memory.episodes.extraction.is_filler) and the turn is a NOOP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy.orm import Session

from memory.config import Settings
from memory.episodes.extraction import FILLER_WORDS
from memory.episodes.models import Episode
from memory.episodes.settings import CaptureSettings
from memory.journal.service import InjectionScope, injected_note_texts
from memory.notes.decide import adds_information
from memory.retrieval.context import FRAME
from memory.retrieval.text import content_tokens, normalise, tokenize, word_set
from memory.types import utcnow

SKIP_COMMAND = "SKIP_COMMAND"
SKIP_ACK = "SKIP_ACK"
SKIP_ECHO = "SKIP_ECHO"

# "/reset", "/model openai/gpt-5", "/think high": a slash word and at most one argument
# ("/usr is full" is a sentence about a path).
_SLASH_COMMAND_RE = re.compile(r"^/[A-Za-z][\w-]*(?:[ \t]+\S+)?$")
_UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
# Words of a request that acts on a memory by its id: "please pin memory <id>".
_MEMORY_COMMAND_WORDS = word_set(
    """
    pin unpin forget delete remove erase drop show open display get fetch read undo restore
    archive unarchive memory memories note notes id please
    """
)
# Words that steer the task at hand without saying anything about anyone: "ok (default)",
# "yes, go ahead", "option 2", "try again".
_ACK_WORDS = word_set(
    """
    default option choice first second third fine done go ahead proceed continue next
    resume retry again confirm confirmed approve approved accept accepted lgtm stop cancel
    skip later perfect excellent much please
    """
)
# An assistant's courtesies around the work: "Happy to help!", "Of course, one moment.",
# "No problem.", "Glad it worked." Said by the user, "happy" or "glad" may be news.
_ASSISTANT_ACK_WORDS = word_set(
    "happy glad help helped course one moment sec second anytime problem worries"
)
MAX_ACK_WORDS = 8
# The API and the journal stamp times on different processes' clocks.
CLOCK_SLACK = timedelta(minutes=1)
_OPTION_RE = re.compile(r"^\d{1,2}$")
# The block /v1/context returns, and its memory and frame lines (memory.retrieval.context),
# and a memory_query listing line: `1. [<uuid>] text (kind, score 0.83)` (plugin/src/tools).
_BLOCK_RE = re.compile(r"<relevant-memories\b[^>]*>.*?(?:</relevant-memories>|$)", re.S | re.I)
_SERVICE_LINE_RES = (
    re.compile(r"^\s*- \[(?:\d{1,2} [A-Z][a-z]{2} \d{4}|this session), [^\]]*\] "),
    re.compile(r"^\s*\d+\.\s+\[[0-9a-f]{8}-[0-9a-f-]{27}\]\s", re.I),
    re.compile(r"^\s*" + re.escape(FRAME.split(".")[0])),
)


def is_command(text: str) -> bool:
    """A slash command to the agent host, or a request acting on a memory id and saying
    nothing else."""
    stripped = normalise(text).strip()
    if "\n" not in stripped and _SLASH_COMMAND_RE.match(stripped):
        return True
    if not _UUID_RE.search(stripped):
        return False
    rest = content_tokens(_UUID_RE.sub(" ", stripped))
    return all(word.casefold() in _MEMORY_COMMAND_WORDS for word in rest)


def is_acknowledgement(text: str, role: str = "user") -> bool:
    """A short turn (at most MAX_ACK_WORDS words) of filler, steering and function words
    only (an assistant's courtesies too), with at most a small option number ("2"). A name
    makes it more than that: "Yes, Biscuit" answers a question."""
    words = tokenize(text)
    if not words or len(words) > MAX_ACK_WORDS:
        return False
    allowed = _ACK_WORDS | FILLER_WORDS
    if role == "assistant":
        allowed |= _ASSISTANT_ACK_WORDS
    return all(
        _OPTION_RE.match(word) or word.casefold() in allowed for word in content_tokens(text)
    )


def strip_service_output(text: str) -> str:
    """`text` without the service's own output (an injected block, its memory lines, a
    memory_query listing's lines); "" when only a short lead-in such as "Here is what I
    found:" (at most MAX_ACK_WORDS words) is left around it."""
    kept = _BLOCK_RE.sub("", text)
    lines = [ln for ln in kept.splitlines() if not any(r.match(ln) for r in _SERVICE_LINE_RES)]
    rest = "\n".join(lines).strip()
    if rest != text.strip() and len(tokenize(rest)) <= MAX_ACK_WORDS:
        return ""
    return rest


def repeats_memories(text: str, memories: Iterable[str]) -> bool:
    """True when every content word of `text`, but for adds_information's allowance, is in
    `memories` (an assistant repeating what was injected); False with no memories."""
    joined = "\n".join(memories)
    return bool(joined and content_tokens(text)) and not adds_information(text, joined)


def skip_reason(text: str, *, role: str, settings: CaptureSettings) -> str | None:
    """The rule that skips a captured turn of `role` (before any look-up), or None.
    Turns with no content word at all are left to extraction (a NOOP)."""
    if role not in ("user", "assistant") or not content_tokens(text):
        return None
    if settings.skip_commands and role == "user" and is_command(text):
        return SKIP_COMMAND
    if settings.skip_acknowledgements and is_acknowledgement(text, role):
        return SKIP_ACK
    if settings.skip_echoes and not content_tokens(strip_service_output(text)):
        return SKIP_ECHO
    return None


def capture_skip_reason(*, session: Session, episode: Episode, settings: Settings) -> str | None:
    """The rule that skips this captured episode, or None (explicit writes, promotions and
    synced files are never skipped). An assistant turn is checked against the memories
    injected into its session in the echo window before it was captured."""
    if episode.source != "capture":
        return None
    rules = settings.capture
    reason = skip_reason(episode.content, role=episode.role, settings=rules)
    if reason is not None or not rules.skip_echoes or episode.role != "assistant":
        return reason
    scope = InjectionScope(episode.tenant_id, episode.user_id, None, episode.session_id)
    window = timedelta(minutes=rules.echo_window_minutes)
    captured = episode.created_at or utcnow()
    memories = injected_note_texts(
        session=session, scope=scope, since=captured - window, until=captured + CLOCK_SLACK
    )
    return SKIP_ECHO if repeats_memories(episode.content, memories) else None


def content_to_remember(episode: Episode, settings: Settings) -> str:
    """The captured turn without the service's own output it quotes; other sources as
    given."""
    if episode.source != "capture" or not settings.capture.skip_echoes:
        return episode.content
    return strip_service_output(episode.content)
