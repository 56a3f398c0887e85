"""Candidate pairs for conflict detection: cosine in the band, best partners first.

Invariants: a pair is returned once, ordered (a.id < b.id, as the conflicts table
stores it); each note contributes at most CANDIDATES_PER_NOTE partners, notes of other
agents before notes of its own agent, then by cosine; a note is never paired with
itself. `band_pairs` compares every pair inside each partition (a full scan);
`band_pairs_for` compares given notes with all notes (the nightly, incremental case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.config import Settings
from memory.consolidation.knowledge import SourceNote
from memory.consolidation.pipeline import partition

CANDIDATES_PER_NOTE = 3
# New notes compared with everyone at once: bounds the blocks' memory (at 40k notes,
# 128 rows ≈ 10 MB per float32 block).
ROWS_PER_BLOCK = 128


@dataclass(frozen=True)
class Candidate:
    a: SourceNote
    b: SourceNote
    similarity: float


def _best_partners(
    sims: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    agents: np.ndarray,
    settings: Settings,
) -> list[tuple[int, int, float]]:
    """(row note, col note, cosine) for each row's best partners in the band.

    `rows`/`cols` are the notes (global indexes) behind the block's rows and columns.
    Other agents' notes rank first: +2 lifts any cross-agent cosine above every
    same-agent one.
    """
    low, high = settings.sleep.conflict_min_similarity, settings.sleep.conflict_max_similarity
    in_band = (sims >= low) & (sims <= high) & (rows[:, None] != cols[None, :])
    cross = agents[rows][:, None] != agents[cols][None, :]
    priority = np.where(in_band, sims + np.float32(2.0) * cross, -np.inf)  # stays float32
    k = min(CANDIDATES_PER_NOTE, sims.shape[1])
    if k == 0:
        return []
    top = np.argpartition(-priority, k - 1, axis=1)[:, :k]
    r = np.repeat(np.arange(len(rows)), k)
    c = top.ravel()
    keep = np.isfinite(priority[r, c])
    return [
        (int(rows[i]), int(cols[j]), float(sims[i, j]))
        for i, j in zip(r[keep], c[keep], strict=True)
    ]


def _agent_codes(notes: Sequence[SourceNote]) -> np.ndarray:
    codes = {agent: n for n, agent in enumerate(sorted({note.agent_id for note in notes}))}
    return np.asarray([codes[note.agent_id] for note in notes], dtype=int)


def _candidates(
    notes: Sequence[SourceNote], found: list[tuple[int, int, float]]
) -> list[Candidate]:
    chosen = {(min(i, j), max(i, j)): sim for i, j, sim in found}
    out = []
    for (i, j), similarity in sorted(chosen.items()):
        a, b = (notes[i], notes[j]) if notes[i].id < notes[j].id else (notes[j], notes[i])
        out.append(Candidate(a, b, similarity))
    return out


def band_pairs(
    notes: Sequence[SourceNote], vectors: np.ndarray, settings: Settings
) -> list[Candidate]:
    """Every note's best partners within its partition (full scan)."""
    agents = _agent_codes(notes)
    found: list[tuple[int, int, float]] = []
    for part in partition(vectors, settings.sleep.partition_size):
        sims = vectors[part] @ vectors[part].T
        found += _best_partners(sims, part, part, agents, settings)
    return _candidates(notes, found)


def band_pairs_for(
    notes: Sequence[SourceNote], vectors: np.ndarray, new: Sequence[int], settings: Settings
) -> list[Candidate]:
    """The best partners of the notes at indexes `new`, among all notes (incremental)."""
    if not new:
        return []
    agents = _agent_codes(notes)
    everyone = np.arange(len(notes))
    found: list[tuple[int, int, float]] = []
    for start in range(0, len(new), ROWS_PER_BLOCK):
        rows = np.asarray(new[start : start + ROWS_PER_BLOCK])
        found += _best_partners(vectors[rows] @ vectors.T, rows, everyone, agents, settings)
    return _candidates(notes, found)
