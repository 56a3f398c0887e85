"""Consolidation of one user's episodic notes into knowledge notes (DESIGN.md §6).

Order: load the active, current episodic notes with embeddings (id order); group them by
access class (and domain when `sleep.cluster_per_domain`), so a knowledge note never
mixes notes with different audiences; partition each group and cluster each partition
with HDBSCAN; match each cluster to an existing knowledge note of the same class by the
Jaccard overlap of their source lineages (≥ MATCH_JACCARD, best pair first, each note
used once); then create, version or leave each knowledge note.

Invariants: a re-run over an unchanged store changes nothing (same clusters, same
sources, every match "unchanged"); a cluster that gained sources updates its knowledge
note as a new version instead of adding a second one, while one that only lost sources
(archived by decay) leaves it as it is: what was learned stays learned; sources are never
changed; a dry run writes nothing and calls no LLM.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from sqlalchemy import insert
from sqlalchemy.orm import Session

from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.consolidation.knowledge import (
    Cluster,
    SourceNote,
    Write,
    build_note,
    knowledge_sources,
    write_knowledge,
)
from memory.consolidation.matching import access_class, match_existing
from memory.consolidation.pipeline import (
    Summary,
    cluster_labels,
    coherent_clusters,
    extractive_summary,
    llm_summary,
    partition,
)
from memory.consolidation.snapshot import Snapshot, load_snapshot
from memory.errors import MemoryServiceError
from memory.notes.models import Note
from memory.ops.models import AuditEvent

log = logging.getLogger(__name__)
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


def find_clusters(
    sources: list[SourceNote], vectors: np.ndarray, settings: Settings, report: ConsolidationReport
) -> list[tuple[tuple[str, ...], Cluster]]:
    """Clusters of each access class, with that class's key."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    per_domain = settings.sleep.cluster_per_domain
    min_size = settings.sleep.min_cluster_size
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
            labels = cluster_labels(vectors[rows], min_cluster_size=min_size)
            kept = coherent_clusters(vectors[rows], labels, min_size=min_size)
            report.noise += len(rows) - sum(len(c) for c in kept)
            for cluster in kept:
                picked = rows[cluster]
                found.append((key, Cluster([sources[i] for i in picked], vectors[picked])))
    report.clusters = len(found)
    return found


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
    snapshot: Snapshot | None = None,
) -> ConsolidationReport:
    """Cluster the user's episodic notes and create or update knowledge notes as of `now`.

    `snapshot` (the user's active notes, read once per sleep cycle) is loaded when absent.
    """
    report = ConsolidationReport(tenant_id=tenant_id, user_id=user_id, now=now, dry_run=dry_run)
    snapshot = snapshot or load_snapshot(session, tenant_id=tenant_id, user_id=user_id)
    episodic = snapshot.where([n.kind == "episodic" for n in snapshot.notes])
    sources, vectors = episodic.notes, episodic.vectors
    report.considered = len(sources)
    clusters = find_clusters(sources, vectors, settings, report)
    existing = knowledge_sources(session, tenant_id=tenant_id, user_id=user_id)
    matches = match_existing(clusters, existing, settings.sleep.cluster_per_domain)
    writes: list[Write] = []
    for (_, cluster), old in zip(clusters, matches, strict=True):
        # Sources only lost (archived by decay, say): the knowledge stands unchanged.
        if old is not None and cluster.source_ids <= existing[old.id][1]:
            report.changes.append(
                KnowledgeChange("unchanged", old.id, None, len(cluster.sources), old.content)
            )
            continue
        texts = [s.content for s in cluster.sources]
        summary = (
            extractive_summary(texts, cluster.vectors) if dry_run else _summarise(cluster, llm)
        )
        note = None if dry_run else build_note(cluster, summary, now=now, settings=settings)
        if note is not None:
            writes.append(Write(cluster, note, old))
        report.changes.append(
            KnowledgeChange(
                "created" if old is None else "updated",
                note.id if note else None,
                old.id if old else None,
                len(cluster.sources),
                summary.content,
            )
        )
    write_knowledge(session, writes, tenant_id=tenant_id, user_id=user_id, now=now)
    _audit(session, writes, tenant_id=tenant_id, user_id=user_id)
    return report


def _audit(session: Session, writes: list[Write], *, tenant_id: str, user_id: str) -> None:
    """One audit row per written knowledge note, in one multi-row INSERT."""
    if not writes:
        return
    session.execute(
        insert(AuditEvent),
        [
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "actor": "consolidation",
                "action": "note.consolidated" if w.old is None else "note.updated",
                "entity_type": "note",
                "entity_id": str(w.note.id),
                "reason": f"cluster of {len(w.cluster.sources)} episodic notes",
                "data": {
                    "sources": sorted(str(s.id) for s in w.cluster.sources),
                    "previous": str(w.old.id) if w.old else None,
                    "method": w.note.metadata_["consolidation"]["method"],
                },
            }
            for w in writes
        ],
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
