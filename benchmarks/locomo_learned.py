"""How far LLM-free re-ranking could go on LoCoMo: a ranker learned across conversations.

A bound, not a product feature: for each of the 10 conversations, a classifier learns
"this candidate is an evidence turn" from the other nine conversations' candidates, then
re-scores the held-out conversation's candidates, and the product's MMR picks the top 20
(as `locomo_rerank` does). The features are every signal the service holds without an
LLM or another model: the read path's score and rank, the query-note cosine, own-turn
BM25, the best neighbour turn's cosine, whether the question names the turn's speaker,
the turn's shape (a question, first person, length, names, an image) and how many of
the top 30 share its session, plus the question's form (would/could, a list, when).
If even this leaves a category short, re-weighting the service's signals cannot close
it; weights learned on LoCoMo are not shipped (they would fit this benchmark).

    .venv/bin/python -m benchmarks.locomo_learned --home /tmp/locomo --json out.json
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import write_results
from benchmarks.locomo_data import (
    Question,
    Turn,
    kept_home_parser,
    load,
    parse_kept_home,
)
from benchmarks.locomo_eval import turn_text
from benchmarks.locomo_rerank import Candidates, dump_kept_home, evaluate_rescored, zscore
from memory.retrieval.fusion import bm25_scores
from memory.retrieval.text import analyse

FEATURES = (
    "score z", "score", "log rank", "cosine z", "cosine", "bm25 z", "bm25",
    "neighbour cosine z", "speaker named", "both named", "turn is a question",
    "first person", "log length", "names", "image", "session share",
    "q would/could", "q list", "q when",
)  # fmt: skip
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|we|our|us)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LIST = re.compile(r"^(what|which)\b.*\b\w+s\b", re.IGNORECASE)

TurnKey = tuple[str, str]  # (conversation, dia id)


class Corpus:
    """The turns by (conversation, dia id), BM25 statistics per conversation, and the
    stored vector of every turn's note (for the neighbour feature)."""

    def __init__(self, turns: list[Turn], notes: dict) -> None:
        self.turns = {(t.conversation, t.dia_id): t for t in turns}
        self.terms = {key: analyse(turn_text(t)) for key, t in self.turns.items()}
        self.speakers: dict[str, set[str]] = defaultdict(set)
        self.stats: dict[str, tuple[dict[str, int], int, float]] = {}
        by_conv: dict[str, list[list[str]]] = defaultdict(list)
        for (conv, _), terms in self.terms.items():
            by_conv[conv].append(terms)
            self.speakers[conv].add(self.turns[(conv, _)].speaker.split()[0].lower())
        for conv, docs in by_conv.items():
            df: dict[str, int] = defaultdict(int)
            for terms in docs:
                for term in set(terms):
                    df[term] += 1
            self.stats[conv] = (df, len(docs), statistics.fmean(len(d) for d in docs))
        self.vectors: dict[TurnKey, np.ndarray] = {}
        for note in notes.values():
            conv = note["session"].rsplit("-s", 1)[0]
            for dia in note["dia"]:
                self.vectors[(conv, dia)] = note["vector"]

    def neighbours(self, key: TurnKey) -> list[np.ndarray]:
        conv, dia = key
        session, number = dia[1:].split(":")
        near = [(conv, f"D{session}:{int(number) + step}") for step in (-1, 1)]
        return [self.vectors[k] for k in near if k in self.vectors]


def count_names(text: str) -> int:
    """Capitalised words that do not open a sentence: names, places, titles."""
    return sum(
        word[:1].isupper() and word[1:2].islower()
        for sentence in _SENTENCE.split(text)
        for word in sentence.split()[1:]
    )


def question_features(q: Question, corpus: Corpus) -> tuple[set[str], list[float]]:
    words = set(re.findall(r"[a-z]+", q.question.lower()))
    named = corpus.speakers[q.conversation] & words
    form = [
        float(bool(re.match(r"(would|could|is it likely|might)\b", q.question, re.IGNORECASE))),
        float(bool(_LIST.match(q.question))),
        float(q.question.lower().startswith("when")),
    ]
    return named, form


def candidate_matrix(q: Question, c: Candidates, corpus: Corpus, notes: dict) -> np.ndarray:
    """One row of FEATURES per candidate; a note of several turns takes its first turn."""
    keys = [(q.conversation, min(notes[i]["dia"])) for i in c.ids]
    df, n, avg = corpus.stats[q.conversation]
    bm25 = bm25_scores(
        analyse(q.question),
        {k: corpus.terms.get(k, []) for k in keys},
        doc_freq=df,
        n_docs=n,
        avg_len=avg,
    )
    bm = np.array([bm25[k] for k in keys])
    cosine = c.vectors @ c.query
    near = np.array([max((v @ c.query for v in corpus.neighbours(k)), default=0.0) for k in keys])
    named, form = question_features(q, corpus)
    sessions = [notes[i]["session"] for i in c.ids]
    top_sessions = sessions[:30]
    rows = []
    for rank, key in enumerate(keys):
        turn = corpus.turns.get(key)
        text = turn.text if turn else ""
        speaker = turn.speaker.split()[0].lower() if turn else ""
        words = max(len(text.split()), 1)
        rows.append(
            [
                float(speaker in named),
                float(len(named) > 1),
                float(text.rstrip().endswith("?")),
                len(_FIRST_PERSON.findall(text)) / math.sqrt(words),
                math.log(words),
                float(count_names(text)),
                float(bool(turn and turn.caption)),
                float(top_sessions.count(sessions[rank])),
                *form,
            ]
        )
    ranks = np.log1p(np.arange(len(c.ids)))
    columns = [zscore(c.scores), c.scores, ranks, zscore(cosine), cosine, zscore(bm), bm]
    return np.column_stack([*columns, zscore(near), np.array(rows)])


def learners() -> dict[str, Callable[[], object]]:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "logistic regression": lambda: make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=2000, C=1.0)
        ),
        "gradient boosting": lambda: HistGradientBoostingClassifier(
            max_iter=300, learning_rate=0.05, max_leaf_nodes=15, random_state=0
        ),
    }


def cross_validated_scores(
    questions: list[Question],
    matrices: dict[int, np.ndarray],
    labels: dict[int, np.ndarray],
    scores: dict[int, np.ndarray],
    make: Callable[[], object],
    columns: list[int],
) -> dict[int, np.ndarray]:
    """Each question's candidates scored by a model fitted on the other conversations;
    `scores` are the product's, whose scale the result takes."""
    out: dict[int, np.ndarray] = {}
    for held_out in sorted({q.conversation for q in questions}):
        train = [i for i, q in enumerate(questions) if q.conversation != held_out]
        model = make()
        model.fit(  # type: ignore[attr-defined]
            np.vstack([matrices[i][:, columns] for i in train]),
            np.concatenate([labels[i] for i in train]),
        )
        for i, q in enumerate(questions):
            if q.conversation == held_out:
                chance = model.predict_proba(matrices[i][:, columns])[:, 1]  # type: ignore[attr-defined]
                out[i] = on_product_scale(chance, scores[i])
    return out


def on_product_scale(chance: np.ndarray, product: np.ndarray) -> np.ndarray:
    """Log-odds moved to the product scores' mean and spread: MMR weighs relevance against
    diversity on min-max scaled scores, so a ranking with the product's order keeps the
    product's selection instead of a skewed probability's."""
    clipped = np.clip(chance, 1e-6, 1 - 1e-6)
    return product.mean() + product.std() * zscore(np.log(clipped / (1 - clipped)))


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--candidates", type=int, default=150)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    turns, questions = load(args.data)
    dumped, notes = dump_kept_home(args.home, questions, args.candidates)
    corpus = Corpus(turns, notes)
    matrices = {i: candidate_matrix(q, dumped[i], corpus, notes) for i, q in enumerate(questions)}
    labels = {
        i: np.array([float(bool(notes[n]["dia"] & set(q.evidence))) for n in dumped[i].ids])
        for i, q in enumerate(questions)
    }
    every = list(range(len(FEATURES)))
    product_only = [FEATURES.index(name) for name in ("score z", "score", "log rank")]
    product = {i: dumped[i].scores for i in range(len(questions))}
    trials: dict[str, dict[int, np.ndarray]] = {"product": product}
    for name, make in learners().items():
        print(f"{name}: fitting 10 folds")
        trials[f"{name}, all features"] = cross_validated_scores(
            questions, matrices, labels, product, make, every
        )
    trials["gradient boosting, the product's score alone"] = cross_validated_scores(
        questions, matrices, labels, product, learners()["gradient boosting"], product_only
    )
    trials["oracle: every evidence candidate first (any re-ranking's ceiling)"] = {
        i: product[i] + 1e3 * labels[i] for i in product
    }
    position = {id(q): index for index, q in enumerate(questions)}
    by_score = {  # the trials' scores as variants of evaluate_rescored
        name: lambda q, c, scores=scores: scores[position[id(q)]] for name, scores in trials.items()
    }
    results = evaluate_rescored(questions, dumped, notes, by_score)
    print(f"results: {write_results('locomo-learned', {'trials': results}, args.json)}")


if __name__ == "__main__":
    main()
