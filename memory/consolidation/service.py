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
(archived by decay) or is part of an earlier cluster leaves it as it is: what was
learned stays learned, and notes already consolidated are not consolidated twice (see
matching.match_existing); sources are never changed; a dry run writes nothing and calls
no LLM.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from memory.clients.llm import LlmClient
from memory.config import Settings
from memory.consolidation.knowledge import (
    Cluster,
    SourceNote,
    Write,
    build_note,
    write_knowledge,
)
from memory.consolidation.known import KnownNote, load_known_notes
from memory.consolidation.matching import Key, Match, access_class, match_existing
from memory.consolidation.pipeline import (
    MEMBER_FLOOR,
    Summary,
    centrality,
    cluster_labels,
    coherent_clusters,
    extractive_summary,
    llm_summary,
    partition,
)
from memory.consolidation.sentences import is_chatter, known_names
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


def source_class(source: SourceNote, per_domain: bool) -> Key:
    return access_class(
        visibility=source.visibility,
        domain=source.domain,
        agent_id=source.agent_id,
        model=source.embedding_model,
        per_domain=per_domain,
    )


def find_clusters(
    sources: list[SourceNote], vectors: np.ndarray, settings: Settings, report: ConsolidationReport
) -> list[tuple[Key, Cluster]]:
    """Clusters of each access class, with that class's key."""
    groups: dict[Key, list[int]] = defaultdict(list)
    per_domain = settings.sleep.cluster_per_domain
    min_size = settings.sleep.min_cluster_size
    for index, s in enumerate(sources):
        groups[source_class(s, per_domain)].append(index)
    found: list[tuple[Key, Cluster]] = []
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


def with_old_sources(
    cluster: Cluster, old: KnownNote, key: Key, episodic: Snapshot, per_domain: bool
) -> Cluster:
    """The cluster plus the old note's sources that are still active, of its class and
    close to it (cosine to its centroid ≥ MEMBER_FLOOR): an update never forgets."""
    centroid, _ = centrality(cluster.vectors)
    where = episodic.lineage_index()
    extra = [
        where[lineage]
        for lineage in sorted(old.lineages - cluster.lineages)
        if lineage in where
        and source_class(episodic.notes[where[lineage]], per_domain) == key
        and float(episodic.vectors[where[lineage]] @ centroid) >= MEMBER_FLOOR
    ]
    if not extra:
        return cluster
    return Cluster(
        cluster.sources + [episodic.notes[i] for i in extra],
        np.vstack([cluster.vectors, episodic.vectors[extra]]),
    )


def _summarise(cluster: Cluster, llm: LlmClient | None, names: frozenset[str]) -> Summary:
    texts = [s.content for s in cluster.sources]
    if llm is not None:
        try:
            return llm_summary(llm, texts, cluster.vectors)
        except MemoryServiceError as exc:  # invalid output or model down: still consolidate
            log.warning("LLM summary failed, using the extractive one: %s", exc)
    return extractive_summary(texts, cluster.vectors, names)


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
    # Chatter ("Wow, what a fun moment!") never forms a cluster of its own.
    names = known_names(snapshot.notes)
    episodic = snapshot.where(
        [n.kind == "episodic" and not is_chatter(n.content, names) for n in snapshot.notes]
    )
    sources, vectors = episodic.notes, episodic.vectors
    report.considered = len(sources)
    per_domain = settings.sleep.cluster_per_domain
    clusters = find_clusters(sources, vectors, settings, report)
    known = load_known_notes(session, tenant_id=tenant_id, user_id=user_id)
    matches = match_existing(
        clusters, known, per_domain=per_domain, min_new=settings.sleep.min_cluster_size
    )
    writes: list[Write] = []
    for (key, cluster), match in zip(clusters, matches, strict=True):
        if match.action != "unchanged" and match.note is not None:
            cluster = with_old_sources(cluster, match.note, key, episodic, per_domain)
        change, write = _change(cluster, match, now=now, settings=settings, llm=llm,
                                dry_run=dry_run, names=names)  # fmt: skip
        report.changes.append(change)
        if write is not None:
            writes.append(write)
    write_knowledge(session, writes, tenant_id=tenant_id, user_id=user_id, now=now)
    _audit(session, writes, tenant_id=tenant_id, user_id=user_id)
    return report


def _change(
    cluster: Cluster,
    match: Match,
    *,
    now: datetime,
    settings: Settings,
    llm: LlmClient | None,
    dry_run: bool,
    names: frozenset[str],
) -> tuple[KnowledgeChange, Write | None]:
    """What one cluster changes, and the note to write (None: nothing, or a dry run);
    `names` are the user's known names (`consolidation.sentences.known_names`)."""
    old = match.note
    if match.action == "unchanged":
        shown = (old.id, old.content) if old else (None, "")
        return KnowledgeChange("unchanged", shown[0], None, len(cluster.sources), shown[1]), None
    texts = [s.content for s in cluster.sources]
    summary = (
        extractive_summary(texts, cluster.vectors, names)
        if dry_run
        else _summarise(cluster, llm, names)
    )
    note = None if dry_run else build_note(cluster, summary, now=now, settings=settings)
    change = KnowledgeChange(
        match.action,
        note.id if note else None,
        old.id if old else None,
        len(cluster.sources),
        summary.content,
    )
    return change, (Write(cluster, note, old) if note is not None else None)


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
    written = {c.note_id: c.action for c in report.changes if c.action != "unchanged"}
    written.pop(None, None)
    if not written:
        return []
    rows = session.execute(
        select(Note.id, Note.tenant_id, Note.user_id, Note.agent_id, Note.visibility,
               Note.domain, Note.kind)
        .where(Note.id.in_(list(written)))
        .order_by(Note.id)
    )  # fmt: skip
    return [
        {
            "type": "note.created" if written[row.id] == "created" else "note.updated",
            "tenant_id": row.tenant_id,
            "user_id": row.user_id,
            "note_id": str(row.id),
            "agent_id": row.agent_id,
            "visibility": row.visibility,
            "domain": row.domain,
            "kind": row.kind,
            "at": report.now.isoformat(),
        }
        for row in rows
    ]
