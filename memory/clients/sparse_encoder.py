"""SPLADE-tiny, the learned sparse encoder of the read path, run on onnxruntime and numpy.

SPLADE maps a text to weights over BERT's 30,522 WordPiece terms: a masked-language
model's logits at every token, log(1 + ReLU), max-pooled over the tokens. Trained on
MS MARCO relevance, it weights a text's own terms and adds related ones ("martial arts"
→ art, degree), on the query side and the document side alike; a query scores a text by
the inner product of the two. The pipeline stores each note's vector as a pgvector
`sparsevec` beside its embedding; the read path encodes the query beside its embedding
and reads the candidates' inner products with their rows (commit 3e808f7, measured in
`benchmarks/results/locomo-s28*.json`). The model's files come from
`memory.clients.sparse_model`; the BERT forward pass is built here from its weights
(`memory.clients.sparse_graph`, onnxruntime, which the embedder needs anyway), so neither
torch nor transformers is needed.

Invariants: `encode` is deterministic, independent of other texts, and returns only
positive weights; `pooled_activation` equals the per-token log(1 + ReLU) max-pooled;
`sparse_text` is pgvector's text form (1-based indices) of exactly those weights; with
`compute="int8"` the weights are those of the int8 image of the output matrix
(`memory.clients.sparse_projection`), the rest of the pass unchanged.
Without the model files (or with `sparse.enabled` false) `get_sparse_encoder` is None and
every caller goes on without sparse vectors.
"""

from __future__ import annotations

import json
import logging
import struct
from functools import lru_cache
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from memory.clients.sparse_graph import BertGraph
from memory.clients.sparse_model import MODEL_ID, default_model_dir, model_ready
from memory.clients.sparse_projection import Int8Projection
from memory.config import Settings, get_settings
from memory.errors import ConfigError
from memory.types import SPARSE_DIMENSION

log = logging.getLogger(__name__)
MAX_TOKENS = 256
SparseVector = dict[int, float]


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every float32 tensor of a safetensors file: an 8-byte little-endian header length,
    a JSON header of names, dtypes, shapes and byte offsets, then the raw data."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    start = 8 + length
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {spec['dtype']}, only F32 is read")
        begin, end = spec["data_offsets"]
        raw = np.frombuffer(data[start + begin : start + end], dtype="<f4")
        tensors[name] = raw.reshape(spec["shape"]).astype(np.float32)
    return tensors


def pooled_activation(logits: np.ndarray) -> np.ndarray:
    """max over tokens of log(1 + ReLU(logits)); log1p∘ReLU is monotonic, so the logits
    are pooled first (one log per term instead of one per token and term)."""
    return np.log1p(np.maximum(logits.max(axis=0), 0.0))


def sparse_text(vector: SparseVector) -> str:
    """pgvector's `sparsevec` text form: `{index:value,...}/dimension`, indices from 1."""
    terms = ",".join(f"{term + 1}:{weight:.6g}" for term, weight in sorted(vector.items()))
    return "{" + terms + "}/" + str(SPARSE_DIMENSION)


class SparseEncoder:
    """BERT's forward pass (post-LayerNorm, GELU, tied output embeddings) in float32: the
    layers as one onnxruntime graph (`memory.clients.sparse_graph`), the projection onto
    the terms in numpy, or with `compute="int8"` with int8 weights on onnxruntime
    (`memory.clients.sparse_projection`)."""

    model_id = MODEL_ID

    def __init__(self, model_dir: Path, compute: str = "float") -> None:
        from tokenizers import Tokenizer

        self.config = json.loads((model_dir / "config.json").read_text())
        self.weights = read_safetensors(model_dir / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        words = self.weights["bert.embeddings.word_embeddings.weight"]
        self.dimension = words.shape[0]
        self._bias = self.weights["cls.predictions.bias"]
        # Tied: logits = h · Eᵀ + bias. The float copy of Eᵀ (15.6 MB) is kept only when
        # the projection runs in float.
        self._int8 = Int8Projection(words.T, self._bias) if compute == "int8" else None
        self._output = None if self._int8 is not None else np.ascontiguousarray(words.T)
        self._graph = BertGraph(self.weights, self.config)

    def encode(self, text: str) -> SparseVector:
        """The text's positive term weights."""
        ids = self.tokenizer.encode(text).ids
        hidden = self._graph.hidden(self._embedded(ids))
        if self._output is not None:
            active = pooled_activation(hidden @ self._output + self._bias)
        else:  # int8: the maximum over tokens is taken inside
            active = np.log1p(np.maximum(self._int8.max_logits(hidden), 0.0))  # type: ignore[union-attr]
        terms = np.flatnonzero(active)
        return dict(zip(terms.tolist(), active[terms].tolist(), strict=True))

    def _embedded(self, ids: list[int]) -> np.ndarray:
        """The summed word, position and token-type embeddings (the graph normalises them);
        looked up here so the 15.6 MB word table is not copied into the graph."""
        w, prefix = self.weights, "bert.embeddings."
        return (
            w[prefix + "word_embeddings.weight"][ids]
            + w[prefix + "position_embeddings.weight"][: len(ids)]
            + w[prefix + "token_type_embeddings.weight"][0]
        )


def get_sparse_encoder(settings: Settings | None = None) -> SparseEncoder | None:
    """The process-wide encoder, or None when switched off or its files are missing."""
    cfg = (settings or get_settings()).sparse
    if not cfg.enabled:
        return None
    return _load_encoder(cfg.model_dir or default_model_dir(), cfg.compute)


def missing_encoder_reason(settings: Settings | None = None) -> str | None:
    """Why `get_sparse_encoder` gives None, in one line naming the fix; None when it
    gives an encoder."""
    cfg = (settings or get_settings()).sparse
    if not cfg.enabled:
        return "the sparse encoder is switched off (sparse.enabled)"
    model_dir = cfg.model_dir or default_model_dir()
    if not model_ready(model_dir):
        return (
            f"no verified {MODEL_ID} files in {model_dir} (run `make install` or "
            "`python -m memory.clients.sparse_model`)"
        )
    return None


@lru_cache(maxsize=4)
def _load_encoder(model_dir: Path, compute: str = "int8") -> SparseEncoder | None:
    if not model_ready(model_dir):
        # Searches still work (dense and lexical routes), a little less well: said once.
        log.warning(
            "sparse encoder: no verified %s files in %s; notes and queries go without "
            "sparse vectors (run `make install` or `python -m memory.clients.sparse_model`)",
            MODEL_ID,
            model_dir,
        )
        return None
    # One BLAS thread for the process: a query's matrices are small, and OpenBLAS's idle
    # threads spin on the cores PostgreSQL and the request need. Measured when the layers
    # still ran in numpy (a query: 3.0 ms of wall and 5.8 of CPU with two threads, 4.0
    # and 4.3 with one; commit 3e808f7); since f6fd4f9 only the float projection
    # (`sparse.compute=float`) and the process's other numpy products use BLAS here.
    threadpool_limits(1, user_api="blas")
    encoder = SparseEncoder(model_dir, compute)
    if encoder.dimension != SPARSE_DIMENSION:
        raise ConfigError(
            f"{model_dir}: {encoder.dimension} terms, the store holds {SPARSE_DIMENSION}",
            key="sparse.model_dir",
        )
    return encoder


def encode_sparse_query(text: str, settings: Settings | None = None) -> str | None:
    """The read path's cached query vector in `sparse_text` form, or None without encoder."""
    encoder = get_sparse_encoder(settings)
    return None if encoder is None else _cached_query(encoder, text)


@lru_cache(maxsize=4096)
def _cached_query(encoder: SparseEncoder, text: str) -> str:
    return sparse_text(encoder.encode(text))
