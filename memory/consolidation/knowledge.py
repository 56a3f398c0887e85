"""Writing knowledge notes: one per cluster of episodic notes, versioned on re-runs.

Invariants: a knowledge note is `kind='knowledge'`, active and current, linked to each
source note by a `consolidates` link (weight: the source's cosine to the centroid) and
cites the sources' episodes in note_sources with relation 'consolidated'; its audience
is never wider than any source's (the caller clusters within one access class, see
service.access_class); a re-run writes version+1 of the same lineage (the old version
closed bi-temporally and unindexed, a `supersedes` link) instead of a second note; the
source notes are never changed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import insert, text
from sqlalchemy.orm import Session

from memory.access.audience import SYSTEM_AUTHORS, Audience, may_flow
from memory.activation.model import initial_half_life, record_access
from memory.clients.sparse_encoder import get_sparse_encoder
from memory.config import Settings
from memory.consolidation.known import KnownNote
from memory.consolidation.pipeline import Summary, unit_rows
from memory.links.models import Link
from memory.notes.embed import note_sparse_vector
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms, unindex_note_terms
from memory.notes.models import Note
from memory.trust.origin import least_trusted

# Author of a knowledge note drawn from several agents' notes: no real agent, so the
# "own notes" visibility rule never widens who can read it (audience.SYSTEM_AUTHORS).
CONSOLIDATION_AGENT = next(iter(SYSTEM_AUTHORS))


@dataclass(frozen=True)
class SourceNote:
    id: uuid.UUID
    lineage_id: uuid.UUID
    agent_id: str
    visibility: str
    domain: str
    content: str
    tags: list[str]
    importance: float
    occurred_at: datetime
    embedding_model: str | None
    speaker: str | None = None
    kind: str = "episodic"
    updated_at: datetime | None = None  # last change (activation, revision, use)
    trust: str = "high"


@dataclass(frozen=True)
class Cluster:
    sources: list[SourceNote]
    vectors: np.ndarray  # unit rows, aligned with sources

    @property
    def source_ids(self) -> frozenset[uuid.UUID]:
        return frozenset(s.id for s in self.sources)

    @property
    def lineages(self) -> frozenset[uuid.UUID]:
        return frozenset(s.lineage_id for s in self.sources)


def _author(sources: Sequence[SourceNote]) -> str:
    agents = {s.agent_id for s in sources}
    return agents.pop() if len(agents) == 1 else CONSOLIDATION_AGENT


def _common(values: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return max(sorted(counts), key=lambda v: counts[v])


def _tags(sources: Sequence[SourceNote]) -> list[str]:
    counts: dict[str, int] = {}
    for source in sources:
        for tag in dict.fromkeys(source.tags or []):
            counts[tag] = counts.get(tag, 0) + 1
    shared = [t for t, n in counts.items() if n >= 2]
    return ["consolidated", *sorted(shared, key=lambda t: (-counts[t], t))[:5]]


def build_note(cluster: Cluster, summary: Summary, *, now: datetime, settings: Settings) -> Note:
    """A new, active, indexed-ready knowledge note for `cluster` (not yet added)."""
    sources = cluster.sources
    centroid = unit_rows(cluster.vectors.mean(axis=0, keepdims=True))[0]
    note_id = uuid.uuid4()
    cohesion = float(np.mean(cluster.vectors @ centroid))
    note = Note(
        id=note_id,
        lineage_id=note_id,
        version=1,
        tenant_id="",
        user_id="",
        agent_id=_author(sources),
        session_id=None,
        speaker=None,
        origin="consolidation",
        trust=least_trusted([s.trust for s in sources]),
        content=summary.content,
        summary=summary.content,
        context=summary.context,
        keywords=list(summary.keywords),
        tags=_tags(sources),
        kind="knowledge",
        domain=_common([s.domain for s in sources]),
        visibility=sources[0].visibility,
        pinned=False,
        status="active",
        importance=min(1.0, max(s.importance for s in sources) + 0.1),
        metadata_={
            "consolidation": {
                "sources": len(sources),
                "method": summary.method,
                "cohesion": round(cohesion, 4),
            }
        },
        occurred_at=max(s.occurred_at for s in sources),
        created_at=now,
        updated_at=now,
        valid_from=now,
        access_times=[now],
        access_count=1,
        first_access_at=now,
        last_access_at=now,
        half_life_hours=initial_half_life("knowledge", settings.activation),
        index_text=f"{summary.content} {' '.join(summary.keywords)}",
        # A summary has no conversational window: the read path finds it by its own text
        # and vector (and no second HNSW entry is paid for).
        window_text=None,
        embed_text=summary.content,
        embedding=centroid,
        window_embedding=None,
        embedding_model=sources[0].embedding_model,
        sparse_embedding=note_sparse_vector(get_sparse_encoder(settings), None, summary.content),
    )
    # Clusters are formed within one access class, so every source may flow into the
    # summary (memory.access.audience); should one not, only the user may read it.
    target = Audience.of(note)
    if not all(may_flow(Audience.of(s), target) for s in sources):
        note.visibility = "user-only"
    apply_terms(note, note_terms(note))
    return note


@dataclass(frozen=True)
class Write:
    """One knowledge note to store: new (`old` None) or version+1 of `old`."""

    cluster: Cluster
    note: Note
    old: KnownNote | None


def write_knowledge(
    session: Session, writes: list[Write], *, tenant_id: str, user_id: str, now: datetime
) -> None:
    """Store every write in a few set-based statements: rows, links, provenance, BM25."""
    if not writes:
        return
    olds = [w.old for w in writes if w.old is not None]
    unindex_note_terms(session=session, notes=olds)  # type: ignore[arg-type]
    for w in writes:
        w.note.tenant_id, w.note.user_id = tenant_id, user_id
        if w.old is not None:
            _continue_lineage(w.note, w.old, now)
    session.add_all(w.note for w in writes)
    session.flush()  # new rows first: superseded_by and the links point at them
    _close_versions(session, [(w.old.id, w.note.id) for w in writes if w.old is not None], now)
    session.execute(insert(Link), [link for w in writes for link in _links(w, tenant_id, user_id)])
    _cite_episodes(session, writes, now)
    index_note_terms(session=session, notes=[w.note for w in writes])
    session.flush()


def _close_versions(
    session: Session, pairs: list[tuple[uuid.UUID, uuid.UUID]], now: datetime
) -> None:
    """Close each old version bi-temporally (valid_to, superseded_by) in one UPDATE."""
    if not pairs:
        return
    session.execute(
        text(
            "UPDATE notes SET valid_to = :now, updated_at = :now, superseded_by = v.new_id "
            "FROM unnest(CAST(:old AS uuid[]), CAST(:new AS uuid[])) AS v(old_id, new_id) "
            "WHERE notes.id = v.old_id AND notes.valid_to IS NULL"
        ),
        {"old": [o for o, _ in pairs], "new": [n for _, n in pairs], "now": now},
    )


def _continue_lineage(note: Note, old: KnownNote, now: datetime) -> None:
    """The new version keeps the lineage, its pin and the use it earned."""
    note.lineage_id, note.version, note.pinned = old.lineage_id, old.version + 1, old.pinned
    times, count, first = record_access(
        list(old.access_times or []), old.access_count, old.first_access_at, now
    )
    note.access_times, note.access_count, note.first_access_at = times, count, first
    note.half_life_hours = max(old.half_life_hours, note.half_life_hours)


def _links(w: Write, tenant_id: str, user_id: str) -> list[dict[str, object]]:
    weights = w.cluster.vectors @ np.asarray(w.note.embedding, dtype=np.float32)
    base = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "source_id": w.note.id,
        "created_by": "pipeline",
    }
    links = [
        {
            **base,
            "id": uuid.uuid4(),
            "target_id": s.id,
            "kind": "consolidates",
            "weight": round(float(weight), 4),
        }
        for s, weight in zip(w.cluster.sources, weights, strict=True)
    ]
    if w.old is not None:
        links.append(
            {**base, "id": uuid.uuid4(), "target_id": w.old.id, "kind": "supersedes", "weight": 1.0}
        )
    return links


def _cite_episodes(session: Session, writes: list[Write], now: datetime) -> None:
    """Each knowledge note cites its sources' episodes (relation 'consolidated')."""
    pairs = [(w.note.id, s.id) for w in writes for s in w.cluster.sources]
    session.execute(
        text(
            "INSERT INTO note_sources (note_id, episode_id, relation, created_at) "
            "SELECT DISTINCT k.note_id, ns.episode_id, 'consolidated', :now "
            "FROM unnest(CAST(:knowledge AS uuid[]), CAST(:sources AS uuid[])) "
            "AS k(note_id, source_id) "
            "JOIN note_sources ns ON ns.note_id = k.source_id "
            "ON CONFLICT DO NOTHING"
        ),
        {"knowledge": [k for k, _ in pairs], "sources": [s for _, s in pairs], "now": now},
    )
