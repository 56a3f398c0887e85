"""The Embedder contract shared by every provider (DESIGN.md §9).

Import it as `memory.clients.embedder.Embedder`; it lives here only so the provider
modules (onnx_embedder, remote_embedders) can subclass it while embedder.py's factory
imports them, without an import cycle.

Invariants for every embedder:
- `embed(texts)` returns a C-contiguous float32 array of shape (len(texts), dimension),
  in input order, each row L2-normalised (so a dot product is the cosine similarity);
- `model_id` names the vector space; it is stored next to each vector, and vectors of
  different `dimension` are never mixed (a provider answering another size is refused);
- `embed_queries` embeds what a reader asks and `embed` what is stored: the same for a
  symmetric model, two roles for one trained with query and passage prefixes (e5).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

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

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed a non-empty list of questions; a symmetric model embeds them as texts."""
        return self._embed(texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of stored texts (notes, passages, merged content)."""
        return self._checked(texts, self._embed)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors of what a reader asks (a search query, a prompt)."""
        return self._checked(texts, self._embed_queries)

    def _checked(self, texts: list[str], run: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = l2_normalise(run(list(texts)))
        if vectors.shape != (len(texts), self.dimension):
            raise ConfigError(
                f"embedder {self.model_id} returned shape {vectors.shape}, "
                f"expected ({len(texts)}, {self.dimension})",
                key="embedding.dimension",
            )
        return vectors

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]
