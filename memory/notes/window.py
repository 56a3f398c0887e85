"""Window vectors: a note's own embedding blended with its neighbour turns' embeddings.

The `dense_window` route scores the notes the other routes found by their conversational
context (memory.retrieval.candidates; no index is built on these vectors). The window
vector is derived from vectors the pipeline computes anyway, with no embedder call:

    window(n) = normalise(W0 * e(n) + sum_k Wk * (t(-k) + t(+k))),  k = 1 .. TURNS_EACH_SIDE

where e(n) is the note's own embedding and t(±k) the mean embedding of the notes of the
k-th turn before / after n's turn in the same session (a missing turn adds nothing).
Embedding a second, neighbour-window text instead cost ~3x the CPU of the note's own text
(benchmarks/README.md "## Ingest").

Invariants:
- Neighbours are the current versions (valid_to IS NULL, not deleted) with an embedding
  and a turn_seq in the same (tenant, user, session), counted by distinct turn_seq; a
  note without a session or turn has its own vector as window.
- `refresh_window_vectors` recomputes from the stored rows, so it is idempotent; it
  refreshes the windows of the seeds' turns and of the TURNS_EACH_SIDE turns on either
  side, so a note decided later refreshes its earlier neighbours.
- Refreshes of one session are serialised by a transaction-level advisory lock taken by
  `lock_note_windows` before the caller locks any note row: the refresh that runs last
  sees every neighbour embedded and committed before it, so no window keeps a stale
  value because two workers decided adjacent batches at the same time.
- Only windows that changed are written (fewer row versions and index inserts).
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnElement,
    Integer,
    String,
    and_,
    bindparam,
    func,
    select,
    text,
)
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.vectors import VectorParam, binary_vector, parse_vector
from memory.notes.writes import note_update
from memory.types import id_in_param, utcnow

# Weights of the note's own vector and of the k-th turn before and after it, nearest
# weighted most (chosen on LoCoMo recall: benchmarks/README.md "## Ingest").
WINDOW_WEIGHTS: tuple[float, ...] = (1.0, 0.5, 0.25)
TURNS_EACH_SIDE = len(WINDOW_WEIGHTS) - 1
_TOLERANCE = 1e-6

SessionKey = tuple[str, str, str]  # (tenant_id, user_id, session_id)


@dataclass(frozen=True)
class WindowSeeds:
    """Notes whose windows (and whose neighbours' windows) need refreshing."""

    turns: dict[SessionKey, frozenset[int]] = field(default_factory=dict)
    unplaced: tuple[uuid.UUID, ...] = ()  # no session or turn: window = own vector


def window_vector(
    own: np.ndarray,
    before: Sequence[np.ndarray],
    after: Sequence[np.ndarray],
    weights: Sequence[float] = WINDOW_WEIGHTS,
) -> np.ndarray:
    """The unit window vector of a note from its own vector and its neighbour turns'
    vectors, each side nearest first (at most len(weights) - 1 are used per side)."""
    total = weights[0] * np.asarray(own, dtype=np.float32)
    for side in (before, after):
        for weight, vector in zip(weights[1:], side, strict=False):
            total = total + weight * np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(total))
    return (total / norm if norm > 0 else total).astype(np.float32)


def _lock_key(key: SessionKey) -> int:
    digest = hashlib.blake2b("\x1f".join(("window", *key)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_note_windows(*, session: Session, note_ids: Sequence[uuid.UUID]) -> WindowSeeds:
    """Take the advisory locks of the notes' sessions (sorted, so two callers never wait
    on each other in a cycle) and return where the notes sit. Call before locking notes."""
    rows = _places_statement().rows(session, {"place_note_ids": list(note_ids)})
    turns: dict[SessionKey, set[int]] = defaultdict(set)
    unplaced: list[uuid.UUID] = []
    for row in rows:
        if row.session_id is None or row.turn_seq is None:
            unplaced.append(row.id)
        else:
            turns[(row.tenant_id, row.user_id, row.session_id)].add(int(row.turn_seq))
    keys = sorted({_lock_key(key) for key in turns})
    if keys:
        _lock_statement().rows(session, {"lock_keys": keys})
    return WindowSeeds({k: frozenset(v) for k, v in turns.items()}, tuple(unplaced))


@cache
def _places_statement() -> CompiledStatement:
    return CompiledStatement(
        select(Note.id, Note.tenant_id, Note.user_id, Note.session_id, Note.turn_seq).where(
            id_in_param(Note.id, "place_note_ids")
        )
    )


@cache
def _lock_statement() -> CompiledStatement:
    keys = bindparam("lock_keys", type_=ARRAY(BigInteger))
    return CompiledStatement(
        text("SELECT pg_advisory_xact_lock(k) FROM unnest(:lock_keys) AS k").bindparams(keys)
    )


def _eligible() -> ColumnElement[bool]:
    """A session's notes that count as window neighbours (the key given as parameters)."""
    return and_(
        Note.tenant_id == bindparam("window_tenant_id", type_=String),
        Note.user_id == bindparam("window_user_id", type_=String),
        Note.session_id == bindparam("window_session_id", type_=String),
        Note.turn_seq.is_not(None),
        Note.embedding.is_not(None),
        Note.valid_to.is_(None),
        Note.status != "deleted",
    )


@dataclass(frozen=True)
class _Row:
    """A neighbour note as the window arithmetic reads it (vectors parsed from binary)."""

    id: uuid.UUID
    turn_seq: int
    embedding: Any
    window_embedding: Any


def _session_rows(session: Session, key: SessionKey, seeds: frozenset[int]) -> list[Any]:
    """The eligible notes from 2 * TURNS_EACH_SIDE distinct turns before the first seed to
    as many after the last: every turn a refreshed window reads."""
    tenant_id, user_id, session_id = key
    rows = _session_rows_statement().rows(
        session,
        {
            "window_tenant_id": tenant_id,
            "window_user_id": user_id,
            "window_session_id": session_id,
            "first_seed": min(seeds),
            "last_seed": max(seeds),
        },
    )
    return [
        _Row(row.id, row.turn_seq, parse_vector(row.embedding), parse_vector(row.window_embedding))
        for row in rows
    ]


@cache
def _session_rows_statement() -> CompiledStatement:
    reach = 2 * TURNS_EACH_SIDE
    scope = _eligible()
    first = bindparam("first_seed", type_=Integer)
    last = bindparam("last_seed", type_=Integer)
    before = (
        select(Note.turn_seq)
        .where(scope, Note.turn_seq < first)
        .distinct()
        .order_by(Note.turn_seq.desc())
        .limit(reach)
        .subquery()
    )
    after = (
        select(Note.turn_seq)
        .where(scope, Note.turn_seq > last)
        .distinct()
        .order_by(Note.turn_seq)
        .limit(reach)
        .subquery()
    )
    low = func.coalesce(select(func.min(before.c.turn_seq)).scalar_subquery(), first)
    high = func.coalesce(select(func.max(after.c.turn_seq)).scalar_subquery(), last)
    return CompiledStatement(
        select(
            Note.id,
            Note.turn_seq,
            binary_vector(Note.embedding, "embedding"),
            binary_vector(Note.window_embedding, "window_embedding"),
        )
        .where(scope, Note.turn_seq.between(low, high))
        .order_by(Note.turn_seq, Note.id)
    )


def _affected(turn_list: list[int], seeds: frozenset[int]) -> set[int]:
    """Indexes into `turn_list` of the seeds' turns and TURNS_EACH_SIDE turns around each."""
    out: set[int] = set()
    for seed in seeds:
        at = bisect.bisect_left(turn_list, seed)
        present = at < len(turn_list) and turn_list[at] == seed
        low = at - TURNS_EACH_SIDE
        high = at + TURNS_EACH_SIDE + (1 if present else 0)
        out.update(i for i in range(max(low, 0), min(high, len(turn_list))))
    return out


def _session_windows(rows: list[Any], seeds: frozenset[int]) -> dict[uuid.UUID, np.ndarray]:
    """New windows of the affected notes that differ from the stored ones."""
    by_turn: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        by_turn[int(row.turn_seq)].append(row)
    turn_list = sorted(by_turn)
    means = [
        np.mean([np.asarray(r.embedding, dtype=np.float32) for r in by_turn[t]], axis=0)
        for t in turn_list
    ]
    changed: dict[uuid.UUID, np.ndarray] = {}
    for index in _affected(turn_list, seeds):
        before = [means[i] for i in range(index - 1, index - 1 - TURNS_EACH_SIDE, -1) if i >= 0]
        after = means[index + 1 : index + 1 + TURNS_EACH_SIDE]
        for row in by_turn[turn_list[index]]:
            window = window_vector(row.embedding, before, after, WINDOW_WEIGHTS)
            stored = row.window_embedding
            if stored is None or not np.allclose(stored, window, rtol=0, atol=_TOLERANCE):
                changed[row.id] = window
    return changed


def changed_windows(*, session: Session, seeds: WindowSeeds) -> dict[uuid.UUID, np.ndarray]:
    """The windows around `seeds` (see the module invariants) that differ from the stored
    ones, computed from the stored rows; nothing is written."""
    changed: dict[uuid.UUID, np.ndarray] = {}
    for key in sorted(seeds.turns):
        rows = _session_rows(session, key, seeds.turns[key])
        changed.update(_session_windows(rows, seeds.turns[key]))
    if seeds.unplaced:
        for row in session.execute(
            select(
                Note.id,
                binary_vector(Note.embedding, "embedding"),
                binary_vector(Note.window_embedding, "window_embedding"),
            ).where(Note.id.in_(seeds.unplaced), Note.embedding.is_not(None))
        ):
            own = parse_vector(row.embedding)
            stored = parse_vector(row.window_embedding)
            if stored is None or not np.allclose(stored, own, rtol=0, atol=_TOLERANCE):
                changed[row.id] = own
    return changed


def store_windows(*, session: Session, windows: dict[uuid.UUID, np.ndarray]) -> None:
    """Write window vectors by note id (sorted, so concurrent writers lock rows in one
    order); objects loaded in `session` are kept in step without a second write."""
    if not windows:
        return
    ordered = sorted(windows.items(), key=lambda kv: kv[0])
    now = utcnow()
    note_update(("window_embedding", "updated_at")).run_many(
        session,
        [
            {"note_id": note_id, "window_embedding": VectorParam(vector), "updated_at": now}
            for note_id, vector in ordered
        ],
    )
    for note_id, vector in ordered:
        loaded = session.identity_map.get(session.identity_key(Note, note_id))  # type: ignore[arg-type]
        if loaded is not None:
            set_committed_value(loaded, "window_embedding", vector)


def refresh_window_vectors(*, session: Session, seeds: WindowSeeds) -> int:
    """Recompute and store the windows around `seeds`; return how many changed. The
    caller holds the seeds' session locks (lock_note_windows)."""
    session.flush()  # pending changes (merged or closed notes) decide who is a neighbour
    windows = changed_windows(session=session, seeds=seeds)
    store_windows(session=session, windows=windows)
    return len(windows)
