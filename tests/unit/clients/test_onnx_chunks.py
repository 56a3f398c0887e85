"""ONNX sub-batches: at most batch_size texts and MAX_BATCH_TOKENS padded tokens per run
(float compute); one text per run with int8 compute."""

from __future__ import annotations

from memory.clients.onnx_embedder import MAX_BATCH_TOKENS, OnnxEmbedder


def test_runs_are_capped_by_padded_tokens_and_by_batch_size() -> None:
    embedder = OnnxEmbedder(batch_size=32, compute="float")  # the model loads lazily
    lengths = [10] * 40 + [40] * 10 + [300]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks = embedder._chunks(order, lengths)
    assert [i for chunk in chunks for i in chunk] == order  # every text once, in order
    for chunk in chunks:
        width = max(lengths[i] for i in chunk)
        assert len(chunk) <= 32
        assert len(chunk) == 1 or len(chunk) * width <= MAX_BATCH_TOKENS
    # short texts fill a run up to the token budget, a text past it runs alone
    assert len(chunks[0]) == min(32, MAX_BATCH_TOKENS // 10)
    assert chunks[-1] == [50]


def test_batch_size_still_caps_tiny_texts() -> None:
    embedder = OnnxEmbedder(batch_size=4, compute="float")
    chunks = embedder._chunks(list(range(10)), [3] * 10)
    assert [len(c) for c in chunks] == [4, 4, 2]


def test_int8_compute_runs_each_text_alone() -> None:
    # int8 quantizes activations with one range per run: a batch would leak into a vector
    embedder = OnnxEmbedder(batch_size=32)
    assert embedder.compute == "int8"
    assert embedder._chunks([2, 0, 1], [3, 3, 3]) == [[2], [0], [1]]
