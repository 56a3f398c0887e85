"""Consolidation stages as pure functions: partition, cluster, summarise.

- `partition` splits unit vectors into groups of at most `size` by bisecting 2-means,
  so the quadratic steps (HDBSCAN on a precomputed cosine matrix, the conflict scan)
  stay bounded at any store size. Near neighbours nearly always share a partition; a
  topic split across two partitions yields two clusters.
- `cluster_labels` is HDBSCAN over cosine distance; -1 is noise. Deterministic for the
  same input order (callers order by note id), so an unchanged store clusters the same.
- `extractive_summary`: the first knowledge sentence (`consolidation.sentences`) of each of
  the notes closest to the cluster centroid, none said twice, and the keywords shared by
  at least two notes; `llm_summary` asks an
  OpenAI-compatible model for the same fields and raises on invalid output.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import hdbscan
import numpy as np

from memory.clients.llm import LlmClient
from memory.consolidation.sentences import knowledge_sentences
from memory.retrieval.text import content_tokens

CENTRAL_NOTES = 3
SHARED_KEYWORDS = 6
MAX_SENTENCE_CHARS = 300
MAX_LLM_NOTES = 40
SPLIT_SAMPLE = 2000
SPLIT_ITERATIONS = 10
# Cosine to the cluster centroid below which a member is treated as a stray.
MEMBER_FLOOR = 0.5


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _two_means(vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A boolean split of `vectors` by 2-means (Lloyd steps fitted on a sample).

    Seeds: the row farthest from the centroid, then the row farthest from it, so a
    split follows the widest direction of the data.
    """
    sample = vectors
    if len(vectors) > SPLIT_SAMPLE:
        sample = vectors[rng.choice(len(vectors), SPLIT_SAMPLE, replace=False)]
    first = sample[np.argmin(sample @ sample.mean(axis=0))]
    second = sample[np.argmin(sample @ first)]
    centres = np.stack([first, second])
    for _ in range(SPLIT_ITERATIONS):
        side = (sample @ centres.T).argmax(axis=1)
        if side.min() == side.max():
            break
        centres = np.stack([sample[side == k].mean(axis=0) for k in (0, 1)])
    return (vectors @ centres.T).argmax(axis=1) == 1


def partition(vectors: np.ndarray, size: int, *, seed: int = 0) -> list[np.ndarray]:
    """Index arrays covering every row once, each of at most `size` rows.

    Bisecting 2-means: a group larger than `size` is split in two along its widest
    direction, recursively. Each level costs one pass over the rows, so partitioning
    100k notes takes well under a second; near neighbours nearly always end up together.
    """
    rng = np.random.default_rng(seed)
    pending, done = [np.arange(len(vectors))], []
    while pending:
        group = pending.pop()
        if len(group) <= size:
            done.append(group)
            continue
        side = _two_means(vectors[group], rng)
        if side.all() or not side.any():  # identical vectors: split by position
            side = np.arange(len(group)) >= len(group) // 2
        pending += [group[~side], group[side]]
    return sorted(done, key=lambda g: int(g[0]) if len(g) else -1)


def cluster_labels(vectors: np.ndarray, *, min_cluster_size: int) -> np.ndarray:
    """HDBSCAN labels over cosine distance of unit `vectors` (-1: noise)."""
    n = len(vectors)
    if n < min_cluster_size or n < 2:
        return np.full(n, -1, dtype=int)
    distance = np.clip(1.0 - vectors.astype(np.float64) @ vectors.T.astype(np.float64), 0, 2)
    np.fill_diagonal(distance, 0.0)
    clusterer = hdbscan.HDBSCAN(
        metric="precomputed",
        min_cluster_size=min_cluster_size,
        min_samples=1,
        cluster_selection_method="leaf",
    )
    return np.asarray(clusterer.fit_predict(distance), dtype=int)


def clusters_of(labels: np.ndarray) -> list[np.ndarray]:
    return [np.flatnonzero(labels == label) for label in sorted(set(labels.tolist())) if label >= 0]


def coherent_clusters(
    vectors: np.ndarray, labels: np.ndarray, *, min_size: int, floor: float = MEMBER_FLOOR
) -> list[np.ndarray]:
    """Clusters without members far from their centroid (cosine < floor); clusters left
    smaller than min_size are dropped. HDBSCAN with min_samples=1 can attach a stray
    point to a cluster at the top of its hierarchy; this keeps it out of the summary."""
    out = []
    for members in clusters_of(labels):
        _, scores = centrality(vectors[members])
        kept = members[scores >= floor]
        if len(kept) >= min_size:
            out.append(kept)
    return out


@dataclass(frozen=True)
class Summary:
    content: str
    context: str
    keywords: list[str]
    method: str  # "extractive" | "llm"


def centrality(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit centroid, each row's cosine to it)."""
    centroid = unit_rows(vectors.mean(axis=0, keepdims=True))[0]
    return centroid, vectors @ centroid


def shared_keywords(texts: Sequence[str], limit: int = SHARED_KEYWORDS) -> list[str]:
    """Content words found in at least two texts, most widespread first."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({t for t in content_tokens(text) if len(t) > 2 and not t.isdigit()})
    common = [(word, n) for word, n in counts.items() if n >= 2]
    common.sort(key=lambda item: (-item[1], item[0]))
    return [word for word, _ in common[:limit]]


def _lead_sentence(text: str, names: frozenset[str]) -> str | None:
    """The note's first knowledge sentence (`consolidation.sentences`), cut to length."""
    sentences = knowledge_sentences(text, names)
    if not sentences:
        return None
    sentence = sentences[0]
    return sentence if len(sentence) <= MAX_SENTENCE_CHARS else sentence[:MAX_SENTENCE_CHARS] + "…"


def _same_sentence(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.casefold()))


def extractive_summary(
    texts: Sequence[str], vectors: np.ndarray, names: frozenset[str] = frozenset()
) -> Summary:
    """The most central notes' first knowledge sentences, each said once, and the
    cluster's shared keywords; `names` are the speakers' names."""
    _, scores = centrality(vectors)
    chosen: list[str] = []
    seen: set[str] = set()
    for index in np.argsort(-scores, kind="stable"):
        sentence = _lead_sentence(texts[int(index)], names)
        if sentence is not None and _same_sentence(sentence) not in seen:
            chosen.append(sentence)
            seen.add(_same_sentence(sentence))
        if len(chosen) == CENTRAL_NOTES:
            break
    keywords = shared_keywords(texts)
    topic = ", ".join(keywords[:3]) if keywords else "recurring topic"
    context = f"Consolidated from {len(texts)} memories about {topic}"
    return Summary(" ".join(chosen), context, keywords, "extractive")


SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "keywords": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["summary", "keywords"],
}
SUMMARY_PROMPT = (
    "You consolidate a person's episodic memories into one durable piece of knowledge. "
    "Write a short factual summary (at most three sentences) of what the memories say "
    "together, keeping names, numbers and dates, adding nothing they do not say. Also "
    "give up to six keywords."
)


def llm_summary(llm: LlmClient, texts: Sequence[str], vectors: np.ndarray) -> Summary:
    """The model's summary of the cluster's most central notes (LlmOutputError if invalid)."""
    _, scores = centrality(vectors)
    order = np.argsort(-scores, kind="stable")[:MAX_LLM_NOTES]
    listing = "\n".join(f"- {texts[int(i)]}" for i in order)
    answer = llm.complete_json(
        SUMMARY_PROMPT, f"Memories:\n{listing}", SUMMARY_SCHEMA, name="consolidate"
    )
    keywords = [str(k).strip() for k in answer["keywords"] if str(k).strip()][:SHARED_KEYWORDS]
    topic = ", ".join(keywords[:3]) if keywords else "recurring topic"
    context = f"Consolidated from {len(texts)} memories about {topic}"
    return Summary(str(answer["summary"]).strip(), context, keywords, "llm")
