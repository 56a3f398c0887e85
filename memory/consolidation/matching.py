"""Which existing knowledge note a new cluster continues, and who may read a cluster.

Invariants: notes share an access class exactly when they have the same audience under
DESIGN.md §7 (and the same embedding model), so clustering within a class can never
widen who reads a summary; a cluster continues the knowledge note of its class whose
source lineages overlap it most (Jaccard ≥ MATCH_JACCARD), each note at most once, so a
re-run updates instead of duplicating. Lineages, not note ids, are compared: a source
revised by the write path is still the same memory.
"""

from __future__ import annotations

import uuid

from memory.consolidation.knowledge import Cluster
from memory.notes.models import Note

MATCH_JACCARD = 0.5


def access_class(
    *, visibility: str, domain: str, agent_id: str, model: str | None, per_domain: bool
) -> tuple[str, ...]:
    """Notes sharing this key have the same audience (DESIGN.md §7) and vector space."""
    if visibility == "scoped":
        key: tuple[str, ...] = ("scoped", domain)
    elif visibility == "private":
        key = ("private", agent_id)
    else:
        key = (visibility,)
    if per_domain and visibility != "scoped":
        key = (*key, domain)
    return (model or "", *key)


def _jaccard(a: frozenset[uuid.UUID], b: frozenset[uuid.UUID]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def match_existing(
    clusters: list[tuple[tuple[str, ...], Cluster]],
    existing: dict[uuid.UUID, tuple[Note, frozenset[uuid.UUID], frozenset[uuid.UUID]]],
    per_domain: bool,
) -> list[Note | None]:
    """For each cluster, the knowledge note it continues (or None): best overlap first."""
    keys = {
        note_id: access_class(
            visibility=n.visibility,
            domain=n.domain,
            agent_id=n.agent_id,
            model=n.embedding_model,
            per_domain=per_domain,
        )
        for note_id, (n, _, _) in existing.items()
    }
    pairs = []
    for index, (key, cluster) in enumerate(clusters):
        for note_id, (_, _, lineages) in existing.items():
            score = _jaccard(cluster.lineages, lineages)
            if score >= MATCH_JACCARD and keys[note_id] == key:
                pairs.append((score, index, note_id))
    matched: list[Note | None] = [None] * len(clusters)
    used: set[uuid.UUID] = set()
    for _, index, note_id in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if matched[index] is None and note_id not in used:
            matched[index] = existing[note_id][0]
            used.add(note_id)
    return matched
