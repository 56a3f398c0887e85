"""The prompt-injection block of /v1/context: the session's working items that match the
prompt, then the best memories, within a token budget.

Invariants: the returned block, including its wrapper lines, never exceeds max_tokens by
the same estimate used to cut it (memory.retrieval.mmr.estimate_tokens); working items
take at most their share of it; a memory whose content is a working item in the block
(the item's promoted copy) is not repeated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.retrieval.mmr import cut_to_budget, estimate_tokens
from memory.retrieval.service import SearchHit
from memory.working.recall import WorkingHit
from memory.working.service import content_hash

# Memories a /v1/context search ranks before the block is cut to its token budget.
CONTEXT_POOL_SIZE = 40
OPEN = "<relevant-memories>"
CLOSE = "</relevant-memories>"
# A working item has no date of its own worth showing: it belongs to the current session.
SESSION_LABEL = "[this session]"


@dataclass(frozen=True)
class ContextBlock:
    """The block ("" when nothing fits), what it holds, and its token estimate."""

    text: str = ""
    notes: list[SearchHit] = field(default_factory=list)
    working: list[WorkingHit] = field(default_factory=list)
    tokens: int = 0


def memory_line(hit: SearchHit) -> str:
    note = hit.note
    day = note.occurred_at.strftime("%-d %b %Y")
    return f"- [{day}] {' '.join(note.content.split())}"


def working_line(hit: WorkingHit) -> str:
    return f"- {SESSION_LABEL} {' '.join(hit.item.content.split())}"


def build_context(
    hits: list[SearchHit],
    max_tokens: int,
    working: Sequence[WorkingHit] = (),
    working_share: float = 1.0,
) -> ContextBlock:
    """The working items first (best first, within `working_share` of the budget), then
    the memories in rank order in what is left; each cut skips what does not fit."""
    frame = estimate_tokens(OPEN) + estimate_tokens(CLOSE)
    budget = max_tokens - frame
    if budget <= 0 or not (hits or working):
        return ContextBlock()
    lines: dict[int, str] = {id(w): working_line(w) for w in working}
    lines.update({id(h): memory_line(h) for h in hits})

    def cost(entry: SearchHit | WorkingHit) -> int:
        return estimate_tokens(lines[id(entry)])

    kept_working = cut_to_budget(working, cost=cost, max_tokens=int(budget * working_share))
    used = sum(cost(w) for w in kept_working)
    shown = {w.item.hash for w in kept_working}
    notes = [h for h in hits if not shown or content_hash(h.note.content) not in shown]
    kept = cut_to_budget(notes, cost=cost, max_tokens=budget - used)
    if not kept and not kept_working:
        return ContextBlock()
    body = [lines[id(e)] for e in (*kept_working, *kept)]
    tokens = frame + used + sum(cost(h) for h in kept)
    return ContextBlock("\n".join([OPEN, *body, CLOSE]), kept, kept_working, tokens)
