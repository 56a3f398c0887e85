"""Consolidation of one user's episodic notes into knowledge notes (DESIGN.md §6).

Order: load the active, current episodic notes with embeddings (id order); group them by
access class (and domain when `sleep.cluster_per_domain`), so a knowledge note never
mixes notes with different audiences; partition each group and cluster each partition
with HDBSCAN; match each cluster to an existing knowledge note of the same class by the
Jaccard overlap of their source lineages (≥ MATCH_JACCARD, best pair first, each note
used once); then create, version or leave each knowledge note.

Invariants: a re-run over an unchanged store changes nothing (same clusters, same
sources, every match "unchanged"); a changed cluster updates its knowledge note as a
new version instead of adding a second one; sources stay as they are; a dry run writes
nothing and calls no LLM.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.consolidation.knowledge import (
    Cluster,
    SourceNote,
    add_knowledge,
    build_note,
    knowledge_sources,
    replace_knowledge,
)
from memory.consolidation.pipeline import (
    Summary,
    cluster_labels,
    clusters_of,
    extractive_summary,
    llm_summary,
    partition,
    unit_rows,
)
from memory.errors import MemoryServiceError
from memory.notes.models import Note
from memory.ops.audit import record_event

log = logging.getLogger(__name__)
MATCH_JACCARD = 0.5
ChangeKind = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class KnowledgeChange:
    action: ChangeKind
    note_id: uuid.UUID | None  # None in a dry run for a note not written
    previous_id: uuid.UUID | None
    sources: int
    content: str


@dataclass
class ConsolidationReport:
    tenant_id: str
    user_id: str
    now: datetime
    dry_run: bool
    considered: int = 0
    partitions: int = 0
    clusters: int = 0
    noise: int = 0
    changes: list[KnowledgeChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {
            "considered": self.considered,
            "partitions": self.partitions,
            "clusters": self.clusters,
            "noise": self.noise,
        }
        for kind in ("created", "updated", "unchanged"):
            out[kind] = sum(1 for c in self.changes if c.action == kind)
        return out


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


def _load_sources(
    session: Session, tenant_id: str, user_id: str
) -> tuple[list[SourceNote], np.ndarray]:
    rows = session.execute(
        select(
            Note.id,
            Note.lineage_id,
            Note.agent_id,
            Note.visibility,
            Note.domain,
            Note.content,
            Note.tags,
            Note.importance,
            Note.occurred_at,
            Note.embedding_model,
            Note.embedding,
        )
        .where(
            Note.tenant_id == tenant_id,
            Note.user_id == user_id,
            Note.kind == "episodic",
            Note.status == "active",
            Note.valid_to.is_(None),
            Note.embedding.is_not(None),
        )
        .order_by(Note.id)
    ).all()
    sources = [SourceNote(*row[:10]) for row in rows]
    vectors = unit_rows(np.stack([row.embedding for row in rows])) if rows else np.zeros((0, 1))
    return sources, vectors


def find_clusters(
    sources: list[SourceNote], vectors: np.ndarray, settings: Settings, report: ConsolidationReport
) -> list[tuple[tuple[str, ...], Cluster]]:
    """Clusters of each access class, with that class's key."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    per_domain = settings.sleep.cluster_per_domain
    for index, s in enumerate(sources):
        key = access_class(
            visibility=s.visibility,
            domain=s.domain,
            agent_id=s.agent_id,
            model=s.embedding_model,
            per_domain=per_domain,
        )
        groups[key].append(index)
    found: list[tuple[tuple[str, ...], Cluster]] = []
    for key in sorted(groups):
        members = np.asarray(groups[key])
        for part in partition(vectors[members], settings.sleep.partition_size):
            report.partitions += 1
            rows = members[part]
            labels = cluster_labels(vectors[rows], min_cluster_size=settings.sleep.min_cluster_size)
            report.noise += int(np.sum(labels < 0))
            for cluster in clusters_of(labels):
                picked = rows[cluster]
                found.append((key, Cluster([sources[i] for i in picked], vectors[picked])))
    report.clusters = len(found)
    return found


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


def _summarise(cluster: Cluster, llm: LlmClient | None) -> Summary:
    texts = [s.content for s in cluster.sources]
    if llm is not None:
        try:
            return llm_summary(llm, texts, cluster.vectors)
        except MemoryServiceError as exc:  # invalid output or model down: still consolidate
            log.warning("LLM summary failed, using the extractive one: %s", exc)
    return extractive_summary(texts, cluster.vectors)


def consolidate_user(
    *,
    session: Session,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    llm: LlmClient | None = None,
    dry_run: bool = False,
) -> ConsolidationReport:
    """Cluster the user's episodic notes and create or update knowledge notes as of `now`."""
    report = ConsolidationReport(tenant_id=tenant_id, user_id=user_id, now=now, dry_run=dry_run)
    sources, vectors = _load_sources(session, tenant_id, user_id)
    report.considered = len(sources)
    clusters = find_clusters(sources, vectors, settings, report)
    existing = knowledge_sources(session, tenant_id=tenant_id, user_id=user_id)
    matches = match_existing(clusters, existing, settings.sleep.cluster_per_domain)
    for (_, cluster), old in zip(clusters, matches, strict=True):
        if old is not None and existing[old.id][1] == cluster.source_ids:
            report.changes.append(
                KnowledgeChange("unchanged", old.id, None, len(cluster.sources), old.content)
            )
            continue
        summary = (
            extractive_summary([s.content for s in cluster.sources], cluster.vectors)
            if dry_run
            else _summarise(cluster, llm)
        )
        action: ChangeKind = "created" if old is None else "updated"
        note_id = None
        if not dry_run:
            note = build_note(cluster, summary, now=now, settings=settings)
            if old is None:
                add_knowledge(session, note, cluster, tenant_id=tenant_id, user_id=user_id)
            else:
                replace_knowledge(session, old, note, cluster, now=now)
            note_id = note.id
            _audit(session, note, old, cluster, summary)
        report.changes.append(
            KnowledgeChange(
                action, note_id, old.id if old else None, len(cluster.sources), summary.content
            )
        )
    session.flush()
    return report


def _audit(
    session: Session, note: Note, old: Note | None, cluster: Cluster, summary: Summary
) -> None:
    record_event(
        session=session,
        tenant_id=note.tenant_id,
        user_id=note.user_id,
        actor="consolidation",
        action="note.consolidated" if old is None else "note.updated",
        entity_type="note",
        entity_id=str(note.id),
        reason=f"cluster of {len(cluster.sources)} episodic notes",
        data={
            "sources": sorted(str(s.id) for s in cluster.sources),
            "previous": str(old.id) if old else None,
            "method": summary.method,
        },
    )


def consolidation_event_payloads(
    session: Session, report: ConsolidationReport
) -> list[dict[str, object]]:
    """Stream events for written knowledge notes, built in the transaction, sent after."""
    out: list[dict[str, object]] = []
    for change in report.changes:
        if change.action == "unchanged" or change.note_id is None:
            continue
        note = session.get(Note, change.note_id)
        if note is None:
            continue
        out.append(
            {
                "type": "note.created" if change.action == "created" else "note.updated",
                "tenant_id": note.tenant_id,
                "user_id": note.user_id,
                "note_id": str(note.id),
                "agent_id": note.agent_id,
                "visibility": note.visibility,
                "domain": note.domain,
                "kind": note.kind,
                "at": report.now.isoformat(),
            }
        )
    return out
