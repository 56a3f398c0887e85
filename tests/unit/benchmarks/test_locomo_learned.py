"""The learned-ranker bound never scores a conversation with a model that saw it, and
hands MMR scores on the product's scale."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from benchmarks.locomo_data import Question, Turn
from benchmarks.locomo_learned import (
    Corpus,
    count_names,
    cross_validated_scores,
    on_product_scale,
)


class _RecordingModel:
    """Remembers the conversations it was fitted on (column 0 holds a conversation number)."""

    fitted: list[set[int]] = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        self.seen = {int(v) for v in x[:, 0]}
        _RecordingModel.fitted.append(self.seen)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        assert not {int(v) for v in x[:, 0]} & self.seen, "scored a conversation it was fitted on"
        chance = np.linspace(0.9, 0.1, len(x))
        return np.column_stack([1 - chance, chance])


def test_each_conversation_is_scored_by_a_model_fitted_on_the_others_only() -> None:
    questions = [
        Question(f"conv-{c}", f"q{c}{n}", 1, ("D1:1",)) for c in range(3) for n in range(2)
    ]
    matrices = {i: np.full((4, 2), float(i // 2)) for i in range(len(questions))}
    labels = {i: np.array([1.0, 0.0, 0.0, 0.0]) for i in matrices}
    product = {i: np.array([4.0, 3.0, 2.0, 1.0]) for i in matrices}
    _RecordingModel.fitted = []
    out = cross_validated_scores(questions, matrices, labels, product, _RecordingModel, [0, 1])
    assert sorted(map(sorted, _RecordingModel.fitted)) == [[0, 1], [0, 2], [1, 2]]
    assert sorted(out) == list(range(len(questions)))


def test_scores_on_the_product_scale_keep_the_models_order_and_the_products_spread() -> None:
    product = np.array([2.0, 1.5, 1.0, 0.2])
    chance = np.array([0.01, 0.7, 0.2, 0.99])
    scaled = on_product_scale(chance, product)
    assert list(np.argsort(-scaled)) == [3, 1, 2, 0]
    assert np.isclose(scaled.mean(), product.mean()) and np.isclose(scaled.std(), product.std())


def test_names_are_capitalised_words_that_do_not_open_a_sentence() -> None:
    assert count_names("I went to Tampa with Caroline. Then we ate.") == 2
    assert count_names("Wow. Great!") == 0


def test_neighbours_are_the_turns_either_side_in_the_same_session() -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    turns = [Turn("c", 1, f"D1:{i}", "Ann", f"turn {i}", None, when) for i in (1, 2, 3)]
    notes = {
        f"n{i}": {"dia": {f"D1:{i}"}, "session": "c-s1", "vector": np.full(2, float(i))}
        for i in (1, 2, 3)
    }
    corpus = Corpus(turns, notes)
    assert sorted(float(v[0]) for v in corpus.neighbours(("c", "D1:2"))) == [1.0, 3.0]
    assert [float(v[0]) for v in corpus.neighbours(("c", "D1:3"))] == [2.0]
