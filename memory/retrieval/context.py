"""The prompt-injection block of /v1/context: the best memories within a token budget.

Invariant: the returned block, including its wrapper lines, never exceeds max_tokens by
the same estimate used to cut it (memory.retrieval.mmr.estimate_tokens).
"""

from __future__ import annotations

from memory.retrieval.mmr import cut_to_budget, estimate_tokens
from memory.retrieval.service import SearchHit

# Memories a /v1/context search ranks before the block is cut to its token budget.
CONTEXT_POOL_SIZE = 40
OPEN = "<relevant-memories>"
CLOSE = "</relevant-memories>"


def memory_line(hit: SearchHit) -> str:
    note = hit.note
    day = note.occurred_at.strftime("%-d %b %Y")
    return f"- [{day}] {' '.join(note.content.split())}"


def build_context(hits: list[SearchHit], max_tokens: int) -> tuple[str, list[SearchHit], int]:
    """(block, the hits it holds, its token estimate); ("", [], 0) when nothing fits."""
    frame = estimate_tokens(OPEN) + estimate_tokens(CLOSE)
    budget = max_tokens - frame
    if budget <= 0 or not hits:
        return "", [], 0
    lines = {id(h): memory_line(h) for h in hits}
    kept = cut_to_budget(hits, cost=lambda h: estimate_tokens(lines[id(h)]), max_tokens=budget)
    if not kept:
        return "", [], 0
    block = "\n".join([OPEN, *(lines[id(h)] for h in kept), CLOSE])
    tokens = frame + sum(estimate_tokens(lines[id(h)]) for h in kept)
    return block, kept, tokens
