"""Who may read what is derived from memories: the one rule every builder of derived data
(windows, evolved keywords and context, knowledge notes, conflict events) asks.

Within one user, the readers of a note (DESIGN.md §7) are:

    open                  every agent, and the user
    scoped  (domain d)    its author, every agent whose domains hold d, and the user
    private               its author, every agent that can see private notes, and the user
    user-only             the user alone (no agent)

Something derived from note A (A's window, keywords, context, a knowledge note) may hold
or be ranked by note B's content only if every reader of A may read B. Agents' domains and
canSeePrivate change without touching any note, so the rule must hold under every
configuration of agents, now and later. That gives this lattice (`may_flow`):

- B open: flows anywhere.
- A user-only: anything of the same user flows into it (only the user reads it).
- A and B scoped: the same domain, and the same author (another author may lack the
  domain; a note authored by no real agent, such as a knowledge note merged from
  several agents' notes, adds no reader of its own).
- A and B private: the same author (or A authored by no real agent).
- Everything else is refused: scoped never flows into private or open, private never
  into scoped or open, user-only into nothing but user-only.

A window only ranks, and the read path can tell who ranks by it, so it may also hold its
author's other notes (but user-only ones) when only its author may rank by it
(`in_window`, `window_readers`): an agent reads every note it wrote but the user-only
ones, whatever its rights, so this too holds under any configuration of agents. With a
single agent, every window holds every neighbour but the user-only ones; the read path
lets no other agent rank by such a window (memory.retrieval.scope.window_usable).

Invariants: `may_flow` and `in_window` are pure functions of the two notes' (visibility,
domain, author); `may_flow` is reflexive and transitive (derived data built from derived
data stays inside the rule) and implies `in_window`; `audience_key` is equal for two
notes exactly when each may flow into the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from memory.errors import InvalidInputError

# Authors that are not agents: their notes add no reader through the "own notes" rule.
SYSTEM_AUTHORS = frozenset({"muma:consolidation"})
# No caller may act as, or write as, an agent whose id starts so (it would read the
# system authors' notes as its own).
RESERVED_AGENT_PREFIX = "muma:"


def require_agent_id(agent_id: str) -> None:
    """InvalidInputError for an agent id reserved for the service's own authors."""
    if agent_id.startswith(RESERVED_AGENT_PREFIX):
        raise InvalidInputError(
            f"agent_id: ids starting with {RESERVED_AGENT_PREFIX!r} are reserved",
            agent_id=agent_id,
        )


class HasAudience(Protocol):
    visibility: str
    domain: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class Audience:
    """The attributes of a note that decide who reads it."""

    visibility: str
    domain: str
    agent_id: str

    @classmethod
    def of(cls, note: HasAudience | Any) -> Audience:
        return cls(str(note.visibility), str(note.domain or ""), str(note.agent_id or ""))


def _real_author(agent_id: str) -> bool:
    return agent_id not in SYSTEM_AUTHORS


def may_flow(source: Audience, into: Audience) -> bool:
    """Whether every reader of a note with audience `into` may read a note with audience
    `source`, under any configuration of agents (see the module docstring)."""
    if source.visibility == "open" or into.visibility == "user-only":
        return True
    if source.visibility != into.visibility or source.visibility not in ("scoped", "private"):
        return False
    if source.visibility == "scoped" and source.domain != into.domain:
        return False
    return source.agent_id == into.agent_id or not _real_author(into.agent_id)


def audience_key(audience: Audience) -> tuple[str, ...]:
    """Equal for two audiences exactly when each may flow into the other."""
    if audience.visibility == "scoped":
        return ("scoped", audience.domain, audience.agent_id)
    if audience.visibility == "private":
        return ("private", audience.agent_id)
    return (audience.visibility,)


def in_window(source: Audience, into: Audience) -> bool:
    """Whether a note of audience `source` may join the window of a note of audience
    `into`: it may flow there, or both are the same agent's and `source` is not user-only
    (then only that agent may rank by the window: `window_readers`)."""
    if may_flow(source, into):
        return True
    return (
        source.agent_id == into.agent_id
        and _real_author(into.agent_id)
        and source.visibility != "user-only"
    )


def window_readers(into: Audience, sources: list[Audience]) -> list[str] | None:
    """Which agents may rank by a window of `into` built from `sources` (each `in_window`):
    None when every source may flow into it (any reader of the note may), else its author
    alone (the user reads everything and is not listed)."""
    if all(may_flow(source, into) for source in sources):
        return None
    return [into.agent_id]
