"""The latency data's sparse vectors: pooled from the phrases a note is built from, and
written in pgvector's binary form (as pgvector's own client encodes it)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from pgvector import SparseVector

from benchmarks.latency_data import Draft, PhraseSpace, make_profile, note_sparse_vectors
from benchmarks.latency_load import sparse_binary
from memory.types import SPARSE_DIMENSION


def test_the_binary_form_is_pgvectors() -> None:
    vector = {5: 0.5, 2: 1.0, 30521: 0.25}
    expected = SparseVector(vector, SPARSE_DIMENSION).to_binary()
    assert bytes(sparse_binary(vector)) == expected  # type: ignore[arg-type]
    assert sparse_binary({}) is None


def test_a_notes_vector_is_the_termwise_maximum_of_its_phrases() -> None:
    profile = make_profile("u", 10, seed=1)
    space = PhraseSpace(np.zeros((1, 2, 4)), {}, np.zeros((1, 4)))
    space.sparse_words = [[{1: 0.5, 2: 2.0}, {2: 1.0, 3: 1.5}]]
    space.sparse_names = {name: {} for name in profile.friends}
    space.sparse_names[profile.friends[0]] = {3: 3.0, 4: 0.1}
    space.sparse_templates = [{1: 0.75}]
    when = datetime(2025, 1, 1, tzinfo=UTC)
    draft = Draft("text", "Sam", "episodic", "general", 0, (0, 1), 0, 0, when, 0)
    [pooled] = note_sparse_vectors([draft], profile, space)
    assert pooled == {1: 0.75, 2: 2.0, 3: 3.0, 4: 0.1}
    assert note_sparse_vectors([draft], profile, PhraseSpace(space.words, {}, space.templates)) == [
        {}
    ]
