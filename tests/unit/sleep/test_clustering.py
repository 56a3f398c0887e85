"""Partitioning, HDBSCAN clustering and extractive summaries on synthetic vectors."""

from __future__ import annotations

import numpy as np

from memory.consolidation.pipeline import (
    cluster_labels,
    coherent_clusters,
    extractive_summary,
    partition,
    shared_keywords,
    unit_rows,
)


def blobs(n_topics: int, per_topic: int, noise: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_topics, 64))
    points = np.repeat(centres, per_topic, axis=0) + rng.normal(
        scale=noise, size=(n_topics * per_topic, 64)
    )
    return unit_rows(points)


def test_partition_covers_every_row_once_within_the_size_bound() -> None:
    vectors = blobs(40, 30, 0.3)
    parts = partition(vectors, 100)
    covered = np.sort(np.concatenate(parts))
    assert np.array_equal(covered, np.arange(len(vectors)))
    assert len(parts) >= 12 and max(len(p) for p in parts) <= 100
    assert partition(vectors, 5000)[0].tolist() == list(range(len(vectors)))


def test_partition_keeps_a_tight_topic_together() -> None:
    vectors = blobs(20, 25, 0.2)
    for part in partition(vectors, 100):
        topics = {int(i) // 25 for i in part}
        # Every topic present in a partition is there whole (k-means does not cut blobs).
        for topic in topics:
            assert sum(1 for i in part if int(i) // 25 == topic) == 25


def test_hdbscan_finds_the_topics_and_leaves_strays_as_noise() -> None:
    vectors = np.vstack(
        [blobs(4, 10, 0.25), unit_rows(np.random.default_rng(9).normal(size=(3, 64)))]
    )
    labels = cluster_labels(vectors, min_cluster_size=3)
    clusters = coherent_clusters(vectors, labels, min_size=3)
    # Leaf clusters: a topic may split in two, but no cluster mixes topics.
    assert all(len({int(i) // 10 for i in c}) == 1 for c in clusters)
    assert {int(c[0]) // 10 for c in clusters} == {0, 1, 2, 3}
    assert not set(np.concatenate(clusters).tolist()) & {40, 41, 42}  # the strays
    bigger = cluster_labels(vectors, min_cluster_size=11)
    assert all(len(c) >= 11 for c in coherent_clusters(vectors, bigger, min_size=11))


def test_extractive_summary_takes_central_sentences_and_shared_keywords() -> None:
    texts = [
        "Ann trains for the marathon. She runs daily.",
        "Ann ran the marathon route on Sunday.",
        "Ann bought marathon shoes.",
        "Ann's marathon coach is strict.",
    ]
    # Cosine to the centroid: 0.996, 0.947, 0.836, 0.45.
    vectors = unit_rows(np.array([[0.9, 0.3], [1.0, 0.05], [0.95, -0.2], [0.1, 1.0]]))
    summary = extractive_summary(texts, vectors, frozenset({"Ann"}))
    assert summary.content == (
        "Ann trains for the marathon. Ann ran the marathon route on Sunday. "
        "Ann bought marathon shoes."
    )  # first knowledge sentences of the three most central notes, most central first
    assert summary.keywords[0] == "marathon" and "ann" in summary.keywords
    assert shared_keywords(["one apple", "two pears"]) == []


def test_incremental_pairs_compare_new_notes_with_everyone() -> None:
    from memory.config import load_settings
    from memory.conflicts.pairs import band_pairs_for
    from tests.unit.sleep.test_matching import source

    settings = load_settings()
    base = np.array([1.0, 0.0, 0.0])
    near = unit_rows(np.array([[1.0, 0.5, 0.0]]))[0]  # cosine 0.89 with base: in band
    vectors = unit_rows(np.stack([base, base, near, np.array([0.0, 0.0, 1.0])]))
    notes = [source(n) for n in range(4)]
    found = band_pairs_for(notes, vectors, [2], settings)
    assert {(c.a.id.int, c.b.id.int) for c in found} == {(0, 2), (1, 2)}  # not (0, 1): old
    assert band_pairs_for(notes, vectors, [], settings) == []
