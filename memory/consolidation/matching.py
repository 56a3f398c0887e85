"""Which existing knowledge note a new cluster continues, and who may read a cluster.

Invariants: notes share an access class exactly when they have the same audience under
DESIGN.md §7 (and the same embedding model), so clustering within a class can never
widen who reads a summary; a cluster continues the knowledge note of its class whose
source lineages overlap it most (Jaccard ≥ MATCH_JACCARD), each note at most once, so a
re-run updates instead of duplicating; a cluster whose notes are all consolidated
already (by one knowledge note or several) changes nothing. Lineages, not note ids, are
compared for overlap: a source revised by the write path is still the same memory (but
its new version is new to learn). Cost: linear in the clusters' and notes' sources
(overlaps are counted through a lineage index, never pair by pair).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memory.consolidation.knowledge import Cluster
from memory.consolidation.known import KnownNote

MATCH_JACCARD = 0.5
Key = tuple[str, ...]


def access_class(
    *, visibility: str, domain: str, agent_id: str, model: str | None, per_domain: bool
) -> Key:
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


@dataclass(frozen=True)
class Match:
    """What a cluster means for the knowledge notes of its class."""

    action: Literal["unchanged", "updated", "created"]
    note: KnownNote | None  # the note it leaves or continues (None: a new one)


@dataclass
class _Class:
    """The knowledge notes of one access class, indexed by source lineage."""

    by_lineage: defaultdict[uuid.UUID, list[KnownNote]]
    source_ids: set[uuid.UUID]
    lineages: set[uuid.UUID]


def _index(known: Sequence[KnownNote], per_domain: bool) -> defaultdict[Key, _Class]:
    classes: defaultdict[Key, _Class] = defaultdict(lambda: _Class(defaultdict(list), set(), set()))
    for note in known:
        key = access_class(
            visibility=note.visibility,
            domain=note.domain,
            agent_id=note.agent_id,
            model=note.embedding_model,
            per_domain=per_domain,
        )
        entry = classes[key]
        entry.source_ids |= note.source_ids
        entry.lineages |= note.lineages
        for lineage in note.lineages:
            entry.by_lineage[lineage].append(note)
    return classes


def _overlaps(cluster: Cluster, entry: _Class) -> list[tuple[float, KnownNote]]:
    """(Jaccard of source lineages, note) for every note sharing a lineage, best first."""
    shared: Counter[uuid.UUID] = Counter()
    notes: dict[uuid.UUID, KnownNote] = {}
    for lineage in cluster.lineages:
        for note in entry.by_lineage.get(lineage, ()):
            shared[note.id] += 1
            notes[note.id] = note
    size = len(cluster.lineages)
    scored = [(n / (size + len(notes[i].lineages) - n), notes[i]) for i, n in shared.items()]
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].id))


def match_existing(
    clusters: Sequence[tuple[Key, Cluster]],
    known: Sequence[KnownNote],
    *,
    per_domain: bool,
    min_new: int,
) -> list[Match]:
    """Per cluster, in this order:

    - unchanged: every one of its notes is consolidated already by knowledge notes of
      its class (it only lost members, or it spans parts of earlier clusters);
    - updated: the unused knowledge note whose source lineages overlap it best, with
      Jaccard ≥ MATCH_JACCARD (it gained notes, or a source was revised);
    - unchanged: fewer than `min_new` of its lineages are consolidated nowhere yet
      (nothing new enough to learn: wait until they are a cluster of their own);
    - created: otherwise.
    """
    classes = _index(known, per_domain)
    overlaps = [_overlaps(cluster, classes[key]) for key, cluster in clusters]
    ranked = sorted(
        (-score, index, note.id)
        for index, found in enumerate(overlaps)
        for score, note in found
        if score >= MATCH_JACCARD
    )
    by_id = {note.id: note for note in known}
    continues: dict[int, KnownNote] = {}
    used: set[uuid.UUID] = set()
    for _, index, note_id in ranked:
        if index not in continues and note_id not in used:
            continues[index] = by_id[note_id]
            used.add(note_id)
    out = []
    for index, (key, cluster) in enumerate(clusters):
        entry = classes[key]
        best = overlaps[index][0][1] if overlaps[index] else None
        if cluster.source_ids <= entry.source_ids:
            out.append(Match("unchanged", best))
        elif index in continues:
            out.append(Match("updated", continues[index]))
        elif len(cluster.lineages - entry.lineages) < min_new:
            out.append(Match("unchanged", best))
        else:
            out.append(Match("created", None))
    return out
