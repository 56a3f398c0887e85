"""What a learned sparse encoder (SPLADE-tiny) would add to the read path, on LoCoMo.

Runs against a home that `benchmarks.locomo --home DIR` ingested. Every turn is encoded
alone ("speaker: text [image: caption]", as the baselines index it) and as a window
(each term's largest weight over the previous, own and next turn of its session), every
question alone (`memory.clients.sparse_encoder`). Printed: SPLADE over turns beside the
BM25 baseline, own and own + window; then the product's 150 candidates per question
(`locomo_rerank`'s dump) with the inner products added as channels, each z-scored over
the candidates and scaled by the product scores' spread, selected by the product's MMR.

    .venv/bin/python -m benchmarks.locomo_sparse --home /tmp/locomo

Without `make install`'s model files, the first run downloads them (`memory.clients.sparse_model`).
"""

from __future__ import annotations

import time
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
from benchmarks.locomo_eval import bm25_baseline, evaluate, turn_text
from benchmarks.locomo_rerank import (
    Candidates,
    dump_kept_home,
    evaluate_rescored,
    print_recall_table,
    zscore,
)
from memory.clients.sparse_encoder import SparseEncoder, SparseVector
from memory.clients.sparse_model import default_model_dir, fetch_model

TurnKey = tuple[str, str]  # (conversation, dia_id)
WEIGHTS = (0.05, 0.1, 0.2, 0.3)


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


def encode_turns(model: SparseEncoder, turns: list[Turn]) -> tuple[dict, dict, float]:
    """(own vectors, window vectors, ms per turn), keyed by (conversation, dia_id)."""
    started = time.perf_counter()
    own = {(t.conversation, t.dia_id): model.encode(turn_text(t)) for t in turns}
    per_turn = (time.perf_counter() - started) * 1000 / max(1, len(turns))
    sessions: dict[tuple[str, int], list[TurnKey]] = defaultdict(list)
    for t in turns:  # the file's order is the conversation's
        sessions[(t.conversation, t.session)].append((t.conversation, t.dia_id))
    windows = {}
    for keys in sessions.values():
        for index, key in enumerate(keys):
            around = keys[max(0, index - 1) : index + 2]
            windows[key] = window_max([own[k] for k in around])
    return own, windows, per_turn


def over_turns(
    turns: list[Turn], score: Callable[[Question, TurnKey], float]
) -> Callable[[Question], list[set[str]]]:
    """A retriever ranking every turn of the question's conversation by `score`."""
    by_conversation: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_conversation[turn.conversation].append(turn)

    def retrieve(q: Question) -> list[set[str]]:
        candidates = by_conversation[q.conversation]
        scores = np.array([score(q, (t.conversation, t.dia_id)) for t in candidates])
        return [{candidates[i].dia_id} for i in np.argsort(-scores, kind="stable")[:20]]

    return retrieve


def channel(
    vectors: dict[TurnKey, SparseVector], queries: dict[str, SparseVector], notes: dict
) -> Callable[[Question, Candidates], np.ndarray]:
    """z-scored inner products of the question with each candidate's turn (a note of
    several turns takes its best), computed once per question."""
    memo: dict[int, np.ndarray] = {}

    def scores(q: Question, c: Candidates) -> np.ndarray:
        if id(c) not in memo:
            query = queries[q.question]
            memo[id(c)] = zscore(
                np.array(
                    [
                        max(
                            sparse_dot(query, vectors[(q.conversation, d)]) for d in notes[i]["dia"]
                        )
                        for i in c.ids
                    ]
                )
            )
        return memo[id(c)]

    return scores


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--cache", type=Path, default=default_model_dir(), help="model files")
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    turns, questions = load(args.data)
    model = SparseEncoder(fetch_model(args.cache))
    own, windows, turn_ms = encode_turns(model, turns)
    started = time.perf_counter()
    queries = {q.question: model.encode(q.question) for q in questions}
    question_ms = (time.perf_counter() - started) * 1000 / len(questions)
    print(f"SPLADE-tiny: {turn_ms:.2f} ms per turn, {question_ms:.2f} ms per question")
    baselines = {
        "BM25 over turns": evaluate(questions, bm25_baseline(turns)),
        "SPLADE over turns, own": evaluate(
            questions, over_turns(turns, lambda q, k: sparse_dot(queries[q.question], own[k]))
        ),
        "SPLADE over turns, own + window": evaluate(
            questions,
            over_turns(
                turns,
                lambda q, k: (
                    sparse_dot(queries[q.question], own[k])
                    + sparse_dot(queries[q.question], windows[k])
                ),
            ),
        ),
    }
    print_recall_table("Over raw turns: R@10", baselines)
    dumped, notes = dump_kept_home(args.home, questions, 150)
    own_channel, window_channel = channel(own, queries, notes), channel(windows, queries, notes)
    variants: dict[str, Callable[[Question, Candidates], np.ndarray]] = {
        "product": lambda q, c: c.scores
    }
    for w in WEIGHTS:
        variants[f"+ own, weight {w}"] = lambda q, c, w=w: (
            c.scores + w * c.scores.std() * own_channel(q, c)
        )
        variants[f"+ own and window, weight {w} each"] = lambda q, c, w=w: (
            c.scores + w * c.scores.std() * (own_channel(q, c) + window_channel(q, c))
        )
    rescored = evaluate_rescored(questions, dumped, notes, variants)
    timing = {"ms_per_turn": turn_ms, "ms_per_question": question_ms}
    payload = {"over_turns": baselines, "channels": rescored, "encoding": timing}
    print(f"results: {write_results('locomo-sparse', payload, args.json)}")


if __name__ == "__main__":
    main()
