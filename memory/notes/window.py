"""Windows: a note with its neighbour turns, as a vector (`dense_window`) and as text
(`bm25_window`, memory.notes.window_text).

The `dense_window` route scores the notes the other routes found by their conversational
context (memory.retrieval.candidates; no index is built on these vectors). The window
vector is derived from vectors the pipeline computes anyway, with no embedder call:

    window(n) = normalise(W0 * e(n) + sum_k Wk * (t(-k) + t(+k))),  k = 1 .. TURNS_EACH_SIDE

where e(n) is the note's own embedding and t(±k) the mean embedding of the neighbours of
the k-th turn before / after n's turn in the same session (a turn with none adds nothing).
Embedding a second, neighbour-window text instead cost ~3x the CPU of the note's own text
(commit 35d6624).

Invariants:
- The turns of a session are the distinct turn_seq of its current versions (valid_to IS
  NULL, not deleted) with an embedding; a note without a session or turn has its own
  vector and line as window.
- A note's neighbours are the notes of the TURNS_EACH_SIDE turns before and after its
  own that may flow into it (memory.access.audience.may_flow): a window never holds or
  is ranked by content that a reader of the note may not read. A turn whose notes may
  not flow into it keeps its place (its weight is not given to a farther turn).
- `refresh_windows` recomputes from the stored rows, so it is idempotent; it refreshes
  the windows of the seeds' turns and of the TURNS_EACH_SIDE turns on either side, so a
  note decided, revised, re-audienced or erased later refreshes its neighbours.
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
    bindparam,
    select,
    text,
)
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.access.audience import Audience, in_window, window_readers
from memory.db import CompiledStatement
from memory.notes.models import Note
from memory.notes.vectors import VectorParam
from memory.notes.window_rows import SessionKey, WindowRow, parse_row, row_columns, session_rows
from memory.notes.window_text import TextWindow, compose_window_text, store_window_texts
from memory.notes.writes import note_derived_update
from memory.types import id_in_param

# Weights of the note's own vector and of the k-th turn before and after it, nearest
# weighted most (chosen on LoCoMo recall in commit 35d6624).
WINDOW_WEIGHTS: tuple[float, ...] = (1.0, 0.5, 0.25)
TURNS_EACH_SIDE = len(WINDOW_WEIGHTS) - 1
_TOLERANCE = 1e-6


@dataclass(frozen=True)
class WindowSeeds:
    """Notes whose windows (and whose neighbours' windows) need refreshing."""

    turns: dict[SessionKey, frozenset[int]] = field(default_factory=dict)
    unplaced: tuple[uuid.UUID, ...] = ()  # no session or turn: window = own vector


def window_vector(
    own: np.ndarray,
    before: Sequence[np.ndarray | None],
    after: Sequence[np.ndarray | None],
    weights: Sequence[float] = WINDOW_WEIGHTS,
) -> np.ndarray:
    """The unit window vector of a note from its own vector and its neighbour turns'
    vectors, each side nearest first (at most len(weights) - 1 are used per side; a None
    turn adds nothing and keeps its weight)."""
    total = weights[0] * np.asarray(own, dtype=np.float32)
    for side in (before, after):
        for weight, vector in zip(weights[1:], side, strict=False):
            if vector is not None:
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


@dataclass
class WindowChanges:
    """Windows that differ from the stored ones, by note id, and the rows they belong to."""

    vectors: dict[uuid.UUID, np.ndarray] = field(default_factory=dict)
    # (text, who may rank by the window: memory.access.audience.window_readers)
    texts: dict[uuid.UUID, TextWindow] = field(default_factory=dict)
    rows: dict[uuid.UUID, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.vectors or self.texts)

    def without(self, note_ids: set[uuid.UUID]) -> WindowChanges:
        return WindowChanges(
            {k: v for k, v in self.vectors.items() if k not in note_ids},
            {k: v for k, v in self.texts.items() if k not in note_ids},
            self.rows,
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


@dataclass(frozen=True)
class _Neighbour:
    """One turn's notes that may flow into a given audience."""

    mean: np.ndarray | None
    lines: list[str]
    audiences: list[Audience]


class _Turns:
    """A session's rows by turn, with each turn's neighbours as a given note may use them
    (the notes that may join its window), computed once per turn and audience."""

    def __init__(self, rows: list[WindowRow]) -> None:
        self.by_turn: dict[int, list[WindowRow]] = defaultdict(list)
        for row in rows:
            self.by_turn[row.turn_seq].append(row)
        self.turn_list = sorted(self.by_turn)
        self._cache: dict[tuple[int, Audience], _Neighbour] = {}

    def neighbour(self, index: int, into: Audience) -> _Neighbour:
        # Keyed by the whole audience: which notes may join depends on the author too.
        key = (index, into)
        if key not in self._cache:
            rows = [r for r in self.by_turn[self.turn_list[index]] if in_window(r.audience, into)]
            mean = (
                np.mean([np.asarray(r.embedding, dtype=np.float32) for r in rows], axis=0)
                if rows
                else None
            )
            self._cache[key] = _Neighbour(mean, [r.line for r in rows], [r.audience for r in rows])
        return self._cache[key]

    def window(self, index: int, row: WindowRow) -> tuple[np.ndarray, TextWindow]:
        """The window vector and (text, readers) of `row`, whose turn is `turn_list[index]`."""
        count = len(self.turn_list)
        before = [self.neighbour(i, row.audience) for i in _side(index, -1, count)]
        after = [self.neighbour(i, row.audience) for i in _side(index, +1, count)]
        vector = window_vector(row.embedding, [b.mean for b in before], [a.mean for a in after])
        lines: list[str] = []
        for k in range(TURNS_EACH_SIDE):  # nearest turn first, previous before next
            for side in (before, after):
                if k < len(side):
                    lines += side[k].lines
        sources = [a for n in (*before, *after) for a in n.audiences]
        gate = window_readers(row.audience, sources)
        return vector, (compose_window_text(row.line, lines, row.occurred_at), gate)


def _side(index: int, step: int, count: int) -> list[int]:
    """Indexes of the TURNS_EACH_SIDE turns before (step -1) or after (+1), nearest first."""
    out = [index + step * k for k in range(1, TURNS_EACH_SIDE + 1)]
    return [i for i in out if 0 <= i < count]


def _note_changes(
    changes: WindowChanges, row: WindowRow, vector: np.ndarray, text: TextWindow
) -> None:
    stored = row.window_embedding
    if stored is None or not np.allclose(stored, vector, rtol=0, atol=_TOLERANCE):
        changes.vectors[row.id] = vector
    if text != (row.window_text, row.window_readers):
        changes.texts[row.id] = text
    changes.rows[row.id] = row


def changed_windows(*, session: Session, seeds: WindowSeeds) -> WindowChanges:
    """The windows around `seeds` (see the module invariants) that differ from the stored
    ones, computed from the stored rows; nothing is written."""
    changes = WindowChanges()
    for key in sorted(seeds.turns):
        turns = _Turns(session_rows(session, key, seeds.turns[key], TURNS_EACH_SIDE))
        for index in sorted(_affected(turns.turn_list, seeds.turns[key])):
            for row in turns.by_turn[turns.turn_list[index]]:
                _note_changes(changes, row, *turns.window(index, row))
    if seeds.unplaced:
        statement = select(*row_columns()).where(
            Note.id.in_(seeds.unplaced), Note.embedding.is_not(None)
        )
        for raw in session.execute(statement):
            row = parse_row(raw)
            text = compose_window_text(row.line, (), row.occurred_at)
            _note_changes(changes, row, row.embedding, (text, None))
    return changes


def store_windows(*, session: Session, changes: WindowChanges) -> None:
    """Write changed windows by note id (sorted, so concurrent writers lock rows in one
    order); objects loaded in `session` are kept in step without a second write."""
    store_window_texts(session=session, rows=changes.rows, texts=changes.texts)
    if not changes.vectors:
        return
    ordered = sorted(changes.vectors.items(), key=lambda kv: kv[0])
    # Derived, not an edit: updated_at stays the time of the note's last change.
    note_derived_update(("window_embedding",)).run_many(
        session,
        [
            {"note_id": note_id, "window_embedding": VectorParam(vector)}
            for note_id, vector in ordered
        ],
    )
    for note_id, vector in ordered:
        loaded = session.identity_map.get(session.identity_key(Note, note_id))  # type: ignore[arg-type]
        if loaded is not None:
            set_committed_value(loaded, "window_embedding", vector)


def refresh_windows(*, session: Session, seeds: WindowSeeds) -> int:
    """Recompute and store the windows around `seeds`; return how many notes changed. The
    caller holds the seeds' session locks (lock_note_windows)."""
    session.flush()  # pending changes (merged or closed notes) decide who is a neighbour
    changes = changed_windows(session=session, seeds=seeds)
    store_windows(session=session, changes=changes)
    return len(set(changes.vectors) | set(changes.texts))
