"""Re-ranking trials on LoCoMo: the read path's candidates dumped once, variants scored offline.

Runs against a home that `benchmarks.locomo --home DIR` ingested. Every category 1-4
question goes once through `search_notes` (no MMR, the best `--candidates`); then each
variant re-scores those candidates in this process and MMR picks the top 20 as the
product does (`memory.retrieval.mmr`, the product's pool size and λ), so a variant costs
seconds instead of an ingest. The "product" row reproduces /v1/search (exactly, when
checked in 69b4192). Also printed: where the evidence turns rank among the candidates.

    .venv/bin/python -m benchmarks.locomo_rerank --home /tmp/locomo
    .venv/bin/python -m benchmarks.locomo_rerank --home /tmp/locomo \\
        --channel-model /path/to/a/sentence-transformers/model   # needs sentence-transformers

A channel model adds its cosine between question and turn (z-scored per question) to the
candidates' scores; it re-ranks, it finds nothing new. all-mpnet-base-v2 was measured
this way (`benchmarks/results/locomo-rerank-mpnet-s11.json`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from benchmarks.common import Row, print_table, write_results
from benchmarks.locomo import AGENT, RESEARCH_ENV, TENANT
from benchmarks.locomo_data import (
    CATEGORIES,
    Question,
    Turn,
    kept_home_parser,
    load,
    parse_kept_home,
)
from benchmarks.locomo_eval import evaluate, search_question, turn_text
from benchmarks.stack import BenchStack
from memory.retrieval.mmr import mmr
from memory.retrieval.service import MMR_LAMBDA

TOP_K = 20


@dataclass
class Candidates:
    """One question's candidates, best first: note ids, product scores, vectors."""

    ids: list[str]
    scores: np.ndarray
    vectors: np.ndarray
    query: np.ndarray


Variant = Callable[[Question, Candidates], np.ndarray]


def dump(questions: list[Question], limit: int) -> tuple[dict[int, Candidates], dict]:
    """Each question's best `limit` candidates (no MMR), and note id → (dia ids, session)."""
    from sqlalchemy import text

    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.db import session_scope
    from memory.retrieval.service import SearchOptions

    settings = get_settings()
    with session_scope() as session:
        rows = session.execute(
            text(
                "SELECT n.id::text AS id, n.session_id, e.metadata->>'dia_id' AS dia,"
                " n.embedding::text AS embedding FROM notes n"
                " JOIN note_sources s ON s.note_id = n.id JOIN episodes e ON e.id = s.episode_id"
                " WHERE n.tenant_id = :tenant AND n.status = 'active'"
            ),
            {"tenant": TENANT},
        ).all()
    notes: dict[str, dict] = {}
    for row in rows:
        note = notes.setdefault(row.id, {"dia": set(), "session": row.session_id})
        note["dia"].add(row.dia)
        note["vector"] = np.asarray(json.loads(row.embedding), dtype=np.float32)
    out: dict[int, Candidates] = {}
    for index, q in enumerate(questions):
        vector = embed_query(q.question, settings)
        with session_scope() as session:
            hits = search_question(
                session,
                q,
                tenant_id=TENANT,
                agent_id=AGENT,
                vector=vector,
                top_k=limit,
                options=SearchOptions(mmr=False),
            )
        ids = [str(h.note.id) for h in hits]
        out[index] = Candidates(
            ids,
            np.array([h.score for h in hits]),
            np.stack([notes[i]["vector"] for i in ids]),
            np.asarray(vector, dtype=np.float32),
        )
    return out, notes


def zscore(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread else np.zeros_like(values)


def ranked(c: Candidates, scores: np.ndarray) -> list[str]:
    """The product's selection: MMR's k over the best max(3k, 30) by `scores`, then every
    other candidate by score (so ranks past k are those of the scores)."""
    order = np.argsort(-scores, kind="stable")
    pool = order[: max(TOP_K * 3, 30)]
    top, bottom = scores[pool].max(), scores[pool].min()
    span = (top - bottom) or 1.0
    picked = mmr(
        [c.ids[i] for i in pool],
        {c.ids[i]: (scores[i] - bottom) / span for i in pool},
        {c.ids[i]: c.vectors[i] for i in pool},
        lam=MMR_LAMBDA,
        k=TOP_K,
    )
    chosen = set(picked)
    return picked + [c.ids[i] for i in order if c.ids[i] not in chosen]


def variants(notes: dict, channel: Callable[[Question, Candidates], np.ndarray] | None):
    """name → re-scoring of a question's candidates (the product's score is the base)."""

    def prf(weight: float, top: int) -> Variant:
        def score(q: Question, c: Candidates) -> np.ndarray:
            centroid = c.vectors[:top].mean(axis=0)
            return c.scores + weight * zscore(c.vectors @ (centroid / np.linalg.norm(centroid)))

        return score

    def session_penalty(weight: float) -> Variant:
        # Applied as a score cut for every earlier candidate of the same session.
        def score(q: Question, c: Candidates) -> np.ndarray:
            seen: dict[str, int] = {}
            out = c.scores.copy()
            for i, note_id in enumerate(c.ids):
                session = notes[note_id]["session"]
                out[i] -= weight * seen.get(session, 0)
                seen[session] = seen.get(session, 0) + 1
            return out

        return score

    table: dict[str, Variant] = {"product": lambda q, c: c.scores}
    for weight in (0.5, 1.0):
        table[f"dense PRF, mean of top 5, weight {weight}"] = prf(weight, 5)
    for weight in (0.5, 1.0):
        table[f"same-session penalty {weight}"] = session_penalty(weight)
    if channel is not None:
        for weight in (0.5, 1.0, 2.0):
            table[f"channel model, weight {weight}"] = lambda q, c, w=weight: (
                c.scores + w * zscore(channel(q, c))
            )
    return table


def channel_model(path: Path, turns: list[Turn], notes: dict) -> Callable:
    """The cosine of a sentence-transformers model between question and candidate turns."""
    from sentence_transformers import SentenceTransformer  # not a project dependency

    model = SentenceTransformer(str(path), device="cpu")
    keys = [(t.conversation, t.dia_id) for t in turns]
    texts = [turn_text(t) for t in turns]
    print(f"channel model: embedding {len(texts)} turns")
    matrix = dict(zip(keys, model.encode(texts, normalize_embeddings=True), strict=True))

    @cache  # one encoding per question, whichever variants ask
    def encode(question: str) -> np.ndarray:
        return model.encode([question], normalize_embeddings=True)[0]

    def cosine(q: Question, c: Candidates) -> np.ndarray:
        vector = encode(q.question)
        return np.array(
            [max(matrix[(q.conversation, d)] @ vector for d in notes[i]["dia"]) for i in c.ids]
        )

    return cosine


def dump_kept_home(
    home: Path, questions: list[Question], limit: int
) -> tuple[dict[int, Candidates], dict]:
    """`dump` on a kept LoCoMo home, its stack started without workers and stopped after."""
    with BenchStack(
        env=RESEARCH_ENV, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False, api=False
    ):
        return dump(questions, limit)


def evaluate_rescored(
    questions: list[Question],
    dumped: dict[int, Candidates],
    notes: dict,
    variants: dict[str, Variant],
) -> dict[str, dict]:
    """Each variant's recall with the product's selection, and a table of its R@10."""
    position = {id(q): index for index, q in enumerate(questions)}
    results = {}
    for name, rescore in variants.items():

        def retrieve(q: Question, rescore: Variant = rescore) -> list[set[str]]:
            c = dumped[position[id(q)]]
            return [notes[i]["dia"] for i in ranked(c, rescore(q, c))]

        results[name] = evaluate(questions, retrieve)
    print_recall_table("R@10", results)
    return results


def print_recall_table(title: str, results: dict[str, dict]) -> None:
    """One row per trial: its R@10 overall and per category."""
    rows = [
        Row(name, " / ".join(f"{t[c]['R@10']:.3f}" for c in ["overall", *CATEGORIES.values()]))
        for name, t in results.items()
    ]
    print_table(f"{title} overall / multi-hop / temporal / open-domain / single-hop", rows)


def rank_table(questions: list[Question], dumped: dict[int, Candidates], notes: dict) -> None:
    buckets = ((10, "≤ 10"), (20, "11-20"), (50, "21-50"), (10**9, "> 50"))
    rows = []
    for category, name in CATEGORIES.items():
        counts = dict.fromkeys([label for _, label in buckets] + ["absent"], 0)
        for index, q in enumerate(questions):
            if q.category != category:
                continue
            order = ranked(dumped[index], dumped[index].scores)
            for evidence in q.evidence:
                rank = next((r for r, i in enumerate(order, 1) if evidence in notes[i]["dia"]), 0)
                label = next((lb for top, lb in buckets if rank and rank <= top), "absent")
                counts[label] += 1
        total = sum(counts.values()) or 1
        rows.append(Row(name, " / ".join(f"{k} {v / total:.3f}" for k, v in counts.items())))
    print_table("Evidence turns by rank among the candidates", rows)


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--candidates", type=int, default=150)
    parser.add_argument("--channel-model", type=Path, help="a sentence-transformers model dir")
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    turns, questions = load(args.data)
    dumped, notes = dump_kept_home(args.home, questions, args.candidates)
    channel = channel_model(args.channel_model, turns, notes) if args.channel_model else None
    rank_table(questions, dumped, notes)
    results = evaluate_rescored(questions, dumped, notes, variants(notes, channel))
    print(f"results: {write_results('locomo-rerank', {'variants': results}, args.json)}")


if __name__ == "__main__":
    main()
