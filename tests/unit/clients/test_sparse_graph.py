"""SPLADE's BERT layers as one onnxruntime graph (`memory.clients.sparse_graph`) equal the
same pass written with whole-matrix numpy operations, for any number of tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import erf

from memory.clients.sparse_graph import BertGraph
from tests.unit.clients.test_sparse_encoder import HEADS, LAYERS, WIDTH, random_model

EPS = 1e-12


def _norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    scaled = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + EPS)
    return scaled * w[name + ".gamma"] + w[name + ".beta"]


def _linear(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _numpy_hidden(w: dict[str, np.ndarray], embedded: np.ndarray) -> np.ndarray:
    """The pass the encoder ran in numpy until f6fd4f9, in float64."""
    hidden = _norm(embedded.astype(np.float64), w, "bert.embeddings.LayerNorm")
    length, width = hidden.shape
    size = width // HEADS
    for layer in range(LAYERS):
        p = f"bert.encoder.layer.{layer}."

        def split(name: str, x: np.ndarray = hidden, p: str = p) -> np.ndarray:
            projected = _linear(x, w, p + "attention.self." + name)
            return projected.reshape(length, HEADS, size).transpose(1, 0, 2)

        query, key, value = split("query"), split("key"), split("value")
        scores = query @ key.transpose(0, 2, 1) / np.sqrt(size)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(1, 0, 2).reshape(length, width)
        attended = _linear(context, w, p + "attention.output.dense") + hidden
        hidden = _norm(attended, w, p + "attention.output.LayerNorm")
        inner = _gelu(_linear(hidden, w, p + "intermediate.dense"))
        output = _linear(inner, w, p + "output.dense") + hidden
        hidden = _norm(output, w, p + "output.LayerNorm")
    head = "cls.predictions.transform."
    return _norm(_gelu(_linear(hidden, w, head + "dense")), w, head + "LayerNorm")


@pytest.mark.parametrize("tokens", [1, 6, 16])
def test_the_graph_equals_the_numpy_pass(tmp_path: Path, tokens: int) -> None:
    weights = random_model(tmp_path)
    config = {"num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "layer_norm_eps": EPS}
    graph = BertGraph(weights, config)
    embedded = np.random.default_rng(tokens).normal(0, 1, (tokens, WIDTH)).astype(np.float32)
    got = graph.hidden(embedded)
    assert got.shape == (tokens, WIDTH) and got.dtype == np.float32
    np.testing.assert_allclose(got, _numpy_hidden(weights, embedded), rtol=1e-4, atol=1e-5)
