"""The SPLADE encoder of the read path: its file reader, its pooling shortcut,
and its BERT forward pass against a loop-by-loop reference on a tiny random model."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from memory.clients.sparse_encoder import (
    SparseEncoder,
    pooled_activation,
    read_safetensors,
    sparse_text,
)

WIDTH, HEADS, INNER, LAYERS = 8, 2, 16, 2
WORDS = ["[UNK]", "the", "cat", "sat", "on", "mat", "dog", "ran"]


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, dict] = {"__metadata__": {"format": "pt"}}  # type: ignore[dict-item]
    blobs, offset = [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def random_model(directory: Path, seed: int = 3) -> dict[str, np.ndarray]:
    from tokenizers import Tokenizer, models, pre_tokenizers

    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    w = {
        "bert.embeddings.word_embeddings.weight": r(len(WORDS), WIDTH),
        "bert.embeddings.position_embeddings.weight": r(16, WIDTH),
        "bert.embeddings.token_type_embeddings.weight": r(2, WIDTH),
        "bert.embeddings.LayerNorm.gamma": 1 + r(WIDTH),
        "bert.embeddings.LayerNorm.beta": r(WIDTH),
        "cls.predictions.bias": r(len(WORDS)),
        "cls.predictions.transform.dense.weight": r(WIDTH, WIDTH),
        "cls.predictions.transform.dense.bias": r(WIDTH),
        "cls.predictions.transform.LayerNorm.gamma": 1 + r(WIDTH),
        "cls.predictions.transform.LayerNorm.beta": r(WIDTH),
    }
    for layer in range(LAYERS):
        p = f"bert.encoder.layer.{layer}."
        for name in ("query", "key", "value"):
            w[p + f"attention.self.{name}.weight"] = r(WIDTH, WIDTH)
            w[p + f"attention.self.{name}.bias"] = r(WIDTH)
        w[p + "attention.output.dense.weight"] = r(WIDTH, WIDTH)
        w[p + "attention.output.dense.bias"] = r(WIDTH)
        w[p + "intermediate.dense.weight"] = r(INNER, WIDTH)
        w[p + "intermediate.dense.bias"] = r(INNER)
        w[p + "output.dense.weight"] = r(WIDTH, INNER)
        w[p + "output.dense.bias"] = r(WIDTH)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".gamma"] = 1 + r(WIDTH)
            w[p + norm + ".beta"] = r(WIDTH)
    write_safetensors(directory / "model.safetensors", w)
    config = {"num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "layer_norm_eps": 1e-12}
    (directory / "config.json").write_text(json.dumps(config))
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))
    return w


def reference_encode(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT written out token by token and head by head, in float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def norm(v: np.ndarray, name: str) -> np.ndarray:
        return (v - v.mean()) / math.sqrt(v.var() + 1e-12) * w[name + ".gamma"] + w[name + ".beta"]

    def linear(v: np.ndarray, name: str) -> np.ndarray:
        return w[name + ".weight"] @ v + w[name + ".bias"]

    def gelu(v: np.ndarray) -> np.ndarray:
        return np.array([x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in v])

    e = "bert.embeddings."
    hidden = [
        norm(
            w[e + "word_embeddings.weight"][i]
            + w[e + "position_embeddings.weight"][pos]
            + w[e + "token_type_embeddings.weight"][0],
            e + "LayerNorm",
        )
        for pos, i in enumerate(ids)
    ]
    size = WIDTH // HEADS
    for layer in range(LAYERS):
        p = f"bert.encoder.layer.{layer}.attention."
        q = [linear(h, p + "self.query") for h in hidden]
        k = [linear(h, p + "self.key") for h in hidden]
        v = [linear(h, p + "self.value") for h in hidden]
        out = []
        for t, h in enumerate(hidden):
            context = np.zeros(WIDTH)
            for head in range(HEADS):
                part = slice(head * size, (head + 1) * size)
                logits = np.array(
                    [q[t][part] @ k[s][part] / math.sqrt(size) for s in range(len(ids))]
                )
                weights = np.exp(logits - logits.max())
                weights /= weights.sum()
                context[part] = sum(weights[s] * v[s][part] for s in range(len(ids)))
            a = norm(linear(context, p + "output.dense") + h, p + "output.LayerNorm")
            f = f"bert.encoder.layer.{layer}."
            inner = gelu(linear(a, f + "intermediate.dense"))
            out.append(norm(linear(inner, f + "output.dense") + a, f + "output.LayerNorm"))
        hidden = out
    c = "cls.predictions."
    per_token = [
        np.log1p(
            np.maximum(
                w[e + "word_embeddings.weight"]
                @ norm(gelu(linear(h, c + "transform.dense")), c + "transform.LayerNorm")
                + w[c + "bias"],
                0,
            )
        )
        for h in hidden
    ]
    return np.max(per_token, axis=0)


def test_the_forward_pass_matches_a_token_by_token_reference(tmp_path: Path) -> None:
    weights = random_model(tmp_path)
    model = SparseEncoder(tmp_path)
    text = "the cat sat on the mat"
    ids = model.tokenizer.encode(text).ids
    expected = reference_encode(weights, ids)
    got = np.zeros(len(WORDS))
    for term, weight in model.encode(text).items():
        got[term] = weight
    assert np.count_nonzero(expected) > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_text_encodes_the_same_alone_or_after_others(tmp_path: Path) -> None:
    random_model(tmp_path)
    model = SparseEncoder(tmp_path)
    alone = model.encode("dog ran")
    model.encode("the cat sat on the mat")
    assert model.encode("dog ran") == alone
    assert all(weight > 0 for weight in alone.values())


def test_safetensors_are_read_back_as_written(tmp_path: Path) -> None:
    tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, np.float32)}
    write_safetensors(tmp_path / "t.safetensors", tensors)
    read = read_safetensors(tmp_path / "t.safetensors")
    assert set(read) == {"a", "b"}
    np.testing.assert_array_equal(read["a"], tensors["a"])


def test_a_tensor_that_is_not_float32_is_refused(tmp_path: Path) -> None:
    header = json.dumps({"x": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "h.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(ValueError, match="F16"):
        read_safetensors(tmp_path / "h.safetensors")


def test_pooling_the_logits_first_equals_pooling_the_activations() -> None:
    logits = np.random.default_rng(0).normal(0, 2, (7, 50))
    naive = np.log1p(np.maximum(logits, 0)).max(axis=0)
    np.testing.assert_allclose(pooled_activation(logits), naive)


def test_the_text_form_is_pgvectors_with_indices_from_one() -> None:
    assert sparse_text({0: 0.5, 30521: 1.25, 7: 2.0}) == "{1:0.5,8:2,30522:1.25}/30522"
    assert sparse_text({}) == "{}/30522"


def test_without_its_files_or_when_switched_off_there_is_no_encoder(tmp_path: Path) -> None:
    from memory.clients.sparse_encoder import encode_sparse_query, get_sparse_encoder
    from memory.config import load_settings

    missing = load_settings(sparse={"model_dir": str(tmp_path / "absent")})
    assert get_sparse_encoder(missing) is None
    assert encode_sparse_query("anything", missing) is None
    assert get_sparse_encoder(load_settings(sparse={"enabled": False})) is None
    from memory.clients.sparse_encoder import missing_encoder_reason

    reason = missing_encoder_reason(missing)
    assert reason is not None and str(tmp_path / "absent") in reason and "make install" in reason
    switched_off = missing_encoder_reason(load_settings(sparse={"enabled": False}))
    assert switched_off is not None and "sparse.enabled" in switched_off


def test_a_model_of_another_vocabulary_is_refused_by_name(tmp_path: Path) -> None:
    from memory.clients.sparse_encoder import _load_encoder
    from memory.clients.sparse_model import model_ready
    from memory.errors import ConfigError

    random_model(tmp_path)  # 8 terms, not BERT's 30,522
    with pytest.MonkeyPatch.context() as patch:
        # Its files are not the pinned ones; let them pass the digest check to reach the
        # vocabulary check.
        patch.setattr("memory.clients.sparse_encoder.model_ready", lambda _: True)
        with pytest.raises(ConfigError, match="8 terms, the store holds 30522"):
            _load_encoder.__wrapped__(tmp_path)
    assert not model_ready(tmp_path)


def test_the_int8_projection_keeps_the_float_activations(tmp_path: Path) -> None:
    random_model(tmp_path)
    exact, int8 = SparseEncoder(tmp_path), SparseEncoder(tmp_path, compute="int8")
    texts = ("the cat sat on the mat", "dog ran", "the dog sat on the cat")
    assert any(exact.encode(t) != int8.encode(t) for t in texts)  # int8 products ran
    for text in texts:
        a, b = exact.encode(text), int8.encode(text)
        terms = sorted(set(a) | set(b))
        x = np.array([a.get(t, 0.0) for t in terms])
        y = np.array([b.get(t, 0.0) for t in terms])
        assert x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) > 0.999, (text, a, b)
        np.testing.assert_allclose(y, x, atol=0.05 * x.max())


def test_the_int8_products_are_the_float_ones_within_the_quantisation() -> None:
    from memory.clients.sparse_projection import Int8Projection

    rng = np.random.default_rng(5)
    output = rng.normal(0, 1, (16, 300)).astype(np.float32)
    output[:, 7] = 0.0  # a term no hidden state reaches: scale 1, logit = its bias
    bias = rng.normal(0, 1, 300).astype(np.float32)
    hidden = rng.normal(0, 1, (5, 16)).astype(np.float32)
    expected = (hidden @ output + bias).max(axis=0)
    got = Int8Projection(output, bias).max_logits(hidden)
    assert got.shape == (300,)
    assert got[7] == pytest.approx(bias[7])
    spread = np.abs(hidden).sum(axis=1).max() * np.abs(output).max()
    np.testing.assert_allclose(got, expected, atol=0.02 * spread)
