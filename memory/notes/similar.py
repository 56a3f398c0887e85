"""Nearest active notes of a batch of notes (decide and link stages of the write path).

Invariants: one statement per batch, served per note by the HNSW graph of its user's
partition of `note_vectors` (a LATERAL `ORDER BY embedding <=> vector LIMIT k`, pruned per
note at run time), vectors never cross the wire; candidates are the active, current notes
of the same tenant and user, best first. `BatchCandidates` gives each note of a decide
batch the candidates it would have had if searched just before its own decision (the
batch's earlier decisions included).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence

import numpy as np
from sqlalchemy import Integer, String, bindparam, func, select, true
from sqlalchemy.orm import Session, aliased

from memory.access.audience import Audience
from memory.db import CompiledStatement
from memory.notes.decide import Candidate, Decision
from memory.notes.models import Note, NoteVector
from memory.types import id_in_param


@functools.cache
def _similar_statement(status: str | None) -> CompiledStatement:
    """The batched nearest-neighbour statement (`similar_notes`) for the notes of one
    user, built once: the aliases and the LATERAL subquery cost more to construct than
    the query takes to run.

    The LATERAL reads note_vectors alone (`active` = active and current), so the HNSW
    graph of the note's partition serves its ORDER BY ... LIMIT; notes are joined for the
    k rows found only. Joined to notes inside the LATERAL, the planner hash-joined and
    sorted every vector of the user instead, per note of the batch. The user is also
    given as a value, so PostgreSQL prunes the other partitions before it starts: pruned
    per row only, the plan held a scan of each of the 64 partitions, set up for each run.
    """
    query, other = aliased(Note, name="q"), aliased(Note, name="n")
    vector = aliased(NoteVector, name="v")
    tenant_id = bindparam("similar_tenant_id", type_=String)
    user_id = bindparam("similar_user_id", type_=String)
    # The note's vector, read once per note: referenced directly, the ORDER BY of a sort
    # (small partitions) fetched it from TOAST again for every row it compared (~6 buffer
    # reads each). OFFSET 0 keeps the subquery from being folded back into the LATERAL;
    # cosine distance ignores the normalisation.
    own = (
        select(func.l2_normalize(query.embedding).label("vector"))
        .correlate(query)
        .offset(0)
        .lateral("own")
    )
    distance = vector.embedding.cosine_distance(own.c.vector)
    nearest = (
        select(vector.note_id, (1 - distance).label("similarity"))
        .where(
            vector.tenant_id == tenant_id,
            vector.user_id == user_id,
            vector.tenant_id == query.tenant_id,
            vector.user_id == query.user_id,
            vector.active,
            vector.note_id != query.id,
        )
        .order_by(distance)
        .limit(bindparam("similar_limit", type_=Integer))
        .lateral("nearest")
    )
    statement = (
        select(
            query.id.label("query_id"),
            other.id,
            other.content,
            other.speaker,
            other.visibility,
            other.domain,
            other.agent_id,
            other.trust,
            other.review,
            nearest.c.similarity,
        )
        .select_from(query)
        .join(own, true())
        .outerjoin(nearest, true())
        .outerjoin(other, other.id == nearest.c.note_id)
        .where(
            id_in_param(query.id, "similar_ids"),
            query.tenant_id == tenant_id,
            query.user_id == user_id,
            query.embedding.is_not(None),
        )
    )
    if status is not None:
        statement = statement.where(query.status == status)
    return CompiledStatement(statement)


Scopes = dict[uuid.UUID, tuple[str, str]]  # note id -> (tenant_id, user_id)


def note_scopes(session: Session, note_ids: Sequence[uuid.UUID]) -> Scopes:
    """The tenant and user of each stored note among `note_ids`."""
    if not note_ids:
        return {}
    rows = _scopes_statement().rows(session, {"scope_note_ids": list(note_ids)})
    return {row.id: (row.tenant_id, row.user_id) for row in rows}


@functools.cache
def _scopes_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id, Note.tenant_id, Note.user_id).where(id_in_param(Note.id, "scope_note_ids"))
    )


def similar_notes(
    session: Session,
    note_ids: Sequence[uuid.UUID],
    *,
    limit: int,
    min_similarity: float = 0.0,
    status: str | None = None,
    scopes: Scopes | None = None,
) -> dict[uuid.UUID, list[Candidate]]:
    """For each note among `note_ids` that has an embedding (and `status`, if given): the
    active, current notes of its tenant and user closest to it (cosine), best first, at
    most `limit`; an empty list when none qualifies. `scopes` (the notes' tenant and
    user, as `note_scopes` gives them) saves looking them up.

    One statement per user of the batch: each note's vector is read in the database and
    searched by a LATERAL `ORDER BY embedding <=> vector LIMIT k` over `note_vectors`,
    which the HNSW graph of the user's partition serves per note; no vector crosses the
    wire.
    """
    if not note_ids:
        return {}
    scopes = note_scopes(session, note_ids) if scopes is None else scopes
    by_user: dict[tuple[str, str], list[uuid.UUID]] = {}
    for note_id in dict.fromkeys(note_ids):
        if note_id in scopes:
            by_user.setdefault(scopes[note_id], []).append(note_id)
    found: dict[uuid.UUID, list[Candidate]] = {}
    for (tenant_id, user_id), ids in by_user.items():
        values = {
            "similar_ids": ids,
            "similar_limit": limit,
            "similar_tenant_id": tenant_id,
            "similar_user_id": user_id,
        }
        for row in _similar_statement(status).rows(session, values):
            candidates = found.setdefault(row.query_id, [])
            if row.id is not None and float(row.similarity) >= min_similarity:
                candidates.append(
                    Candidate(
                        row.id,
                        row.content,
                        row.speaker,
                        float(row.similarity),
                        Audience(row.visibility, row.domain, row.agent_id),
                        (row.trust, row.review),
                    )
                )
    for candidates in found.values():
        # Iterative HNSW scans in relaxed order may return neighbours slightly out of order.
        candidates.sort(key=lambda c: c.similarity, reverse=True)
    return found


class BatchCandidates:
    """The candidates of each note of a decide batch, as if it were searched just before
    its own decision: the stored active notes (one `similar_notes` query for the batch)
    plus the batch's notes decided before it that are still active and current.

    A stored candidate that an earlier decision of the batch closed (UPDATE, DELETE) may
    hide the next-best stored note, so such a note is searched again on its own, after a
    flush, so that this search sees every earlier decision.
    """

    def __init__(self, session: Session, notes: Sequence[Note], limit: int) -> None:
        self.session, self.limit = session, limit
        self.scopes = {n.id: (n.tenant_id, n.user_id) for n in notes}
        self.stored = similar_notes(session, [n.id for n in notes], limit=limit, scopes=self.scopes)
        self.row = {note.id: i for i, note in enumerate(notes)}
        vectors = np.asarray([n.embedding for n in notes], dtype=np.float64).reshape(len(notes), -1)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.cosines = vectors @ vectors.T  # as pgvector's 1 - (a <=> b), to float rounding
        self.activated: list[Note] = []
        self.closed: set[uuid.UUID] = set()

    def for_note(self, note: Note) -> list[Candidate]:
        stored = self.stored.get(note.id, [])
        if any(c.note_id in self.closed for c in stored):
            self.session.flush()
            again = similar_notes(self.session, [note.id], limit=self.limit, scopes=self.scopes)
            return again.get(note.id, [])
        row = self.cosines[self.row[note.id]]
        earlier = [
            Candidate(
                n.id,
                n.content,
                n.speaker,
                float(row[self.row[n.id]]),
                Audience.of(n),
                (n.trust, n.review),
            )
            for n in self.activated
            if n.valid_to is None  # not closed by a later note of the batch
            and (n.tenant_id, n.user_id) == (note.tenant_id, note.user_id)
        ]
        if not earlier:
            return stored
        return sorted([*stored, *earlier], key=lambda c: c.similarity, reverse=True)[: self.limit]

    def record(self, note: Note, decision: Decision) -> None:
        """After `note`'s decision was applied."""
        if note.status == "active":
            self.activated.append(note)
        if decision.action in ("UPDATE", "DELETE") and decision.target_id is not None:
            self.closed.add(decision.target_id)
