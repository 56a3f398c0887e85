"""The Embedder contract shared by every provider (DESIGN.md §9).

Import it as `memory.clients.embedder.Embedder`; it lives here only so the provider
modules (onnx_embedder, remote_embedders) can subclass it while embedder.py's factory
imports them, without an import cycle.

Invariants for every embedder:
- `embed(texts)` returns a C-contiguous float32 array of shape (len(texts), dimension),
  in input order, each row L2-normalised (so a dot product is the cosine similarity);
- `model_id` names the vector space; it is stored next to each vector, and vectors of
  different `dimension` are never mixed (a provider answering another size is refused).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from memory.errors import ConfigError

MINILM_DIMENSION = 384


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (all-zero rows stay zero); always float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


class Embedder(ABC):
    """Turns texts into unit vectors of one fixed `dimension` in the space `model_id`."""

    model_id: str
    dimension: int

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embed a non-empty list; the result may be unnormalised."""

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = l2_normalise(self._embed(list(texts)))
        if vectors.shape != (len(texts), self.dimension):
            raise ConfigError(
                f"embedder {self.model_id} returned shape {vectors.shape}, "
                f"expected ({len(texts)}, {self.dimension})",
                key="embedding.dimension",
            )
        return vectors

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
