"""A search's hit: the note, its final score and what made it (the answer's explanation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory.activation.model import ActivationBreakdown
from memory.retrieval.rows import ScoredNote


@dataclass
class SearchHit:
    note: ScoredNote
    score: float
    relevance: float
    activation: ActivationBreakdown | None
    routes: dict[str, int] = field(default_factory=dict)
    link_spread: float = 0.0
    speaker_boost: float = 0.0
    length_prior: float = 0.0
    sparse: float = 0.0
    # Cosine of the note's own vector to the query's, when the dense route ranked it.
    similarity: float | None = None

    def explanation(self) -> dict[str, Any]:
        a = self.activation
        return {
            "routes": self.routes,
            "relevance": round(self.relevance, 4),
            "base_level": json_number(a.base_level) if a else None,
            "spreading": round(a.spreading, 4) if a else None,
            "noise": round(a.noise, 4) if a else 0.0,
            "retention": round(a.retention, 4) if a else None,
            "threshold_passed": a.threshold_passed if a else True,
            "link_spread": round(self.link_spread, 4),
            "speaker_boost": self.speaker_boost,
            "length_prior": round(self.length_prior, 4),
            "sparse": round(self.sparse, 4),
            "similarity": None if self.similarity is None else round(self.similarity, 4),
        }


def json_number(value: float) -> float | None:
    """`value` rounded for an answer, or None where JSON has no number (±inf, NaN)."""
    return round(value, 4) if np.isfinite(value) else None
