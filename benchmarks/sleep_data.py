"""A synthetic store for the sleep-cycle benchmark: one user, N notes, known structure.

Notes come in topics (sizes 1-40): each topic has a centre vector and a few topic words;
a note's embedding is its centre plus noise (within-topic cosine ≈ 0.75, what MiniLM
gives for short sentences about one thing), its text the user's name, a verb and topic
words. Kinds, visibility, pins, TTLs, access histories, creation times (the last 90
days) and an archived share are drawn so that every sweep rule has work. Rows are
written with set-based INSERTs; terms and BM25 statistics go through the same functions
as the write path.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
from sqlalchemy import insert
from sqlalchemy.orm import Session

from memory.activation.model import initial_half_life
from memory.config import Settings
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms
from memory.notes.models import Note

DIM = 384
KINDS = (
    ("episodic", 0.6),
    ("stable", 0.1),
    ("preference", 0.1),
    ("ephemeral", 0.12),
    ("decision", 0.08),
)
VERBS = (
    "talked about",
    "worked on",
    "planned",
    "remembered",
    "asked about",
    "enjoyed",
    "fixed",
    "read about",
    "bought",
    "shared",
)
SYLLABLES = ("ka", "lo", "mi", "ren", "to", "sa", "vi", "dor", "pel", "qua", "ni", "bru")
BATCH = 5000


@dataclass(frozen=True)
class Plan:
    n_notes: int
    seed: int = 7
    noise: float = 0.58  # |noise| relative to the unit centre: cosine ≈ 1 / (1 + noise²)


def _words(rng: np.random.Generator, n: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 4)))) for _ in range(n)]


def _unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _topics(rng: np.random.Generator, n_notes: int) -> list[int]:
    sizes: list[int] = []
    while sum(sizes) < n_notes:
        sizes.append(int(rng.integers(1, 41)))
    sizes[-1] -= sum(sizes) - n_notes
    return [topic for topic, size in enumerate(sizes) for _ in range(size)]


def _history(rng: np.random.Generator, created: datetime, now: datetime) -> list[datetime]:
    span = (now - created).total_seconds()
    uses = sorted(float(x) for x in rng.uniform(0, span, size=int(rng.poisson(1.5))))
    return [created, *(created + timedelta(seconds=u) for u in uses)]


@dataclass(frozen=True)
class World:
    """The plan's topics: each note's topic, the topic centres and their words."""

    topic_of: list[int]
    centres: np.ndarray
    vocabulary: list[str]


def _world(plan: Plan, rng: np.random.Generator) -> tuple[World, np.ndarray]:
    """The topics, and the plan's notes' noise (drawn in between, so replays match)."""
    topic_of = _topics(rng, plan.n_notes)
    n_topics = max(topic_of) + 1
    centres = _unit(rng.normal(size=(n_topics, DIM)))
    noise = rng.normal(size=(plan.n_notes, DIM)) / np.sqrt(DIM) * plan.noise
    return World(topic_of, centres, _words(rng, n_topics * 4)), noise


def _text(rng: np.random.Generator, world: World, topic: int) -> str:
    words = world.vocabulary[topic * 4 : topic * 4 + 4]
    picked = " ".join(rng.choice(words, size=3, replace=False))
    return f"Alice {rng.choice(VERBS)} the {picked} with {rng.choice(words)}."


def note_rows(
    plan: Plan, *, tenant_id: str, user_id: str, now: datetime, settings: Settings
) -> list[dict[str, Any]]:
    """Row dicts for `plan.n_notes` notes (embeddings as float32 arrays)."""
    rng = np.random.default_rng(plan.seed)
    world, noise = _world(plan, rng)
    vectors = _unit(world.centres[world.topic_of] + noise)
    kinds = rng.choice([k for k, _ in KINDS], p=[p for _, p in KINDS], size=plan.n_notes)
    rows = []
    for i in range(plan.n_notes):
        content = _text(rng, world, world.topic_of[i])
        created = now - timedelta(hours=float(rng.uniform(1, 90 * 24)))
        rows.append(
            _row(
                rng,
                content,
                str(kinds[i]),
                vectors[i],
                created,
                now,
                tenant_id=tenant_id,
                user_id=user_id,
                settings=settings,
            )
        )
    return rows


def new_day_rows(
    plan: Plan,
    n_new: int,
    *,
    tenant_id: str,
    user_id: str,
    start: datetime,
    settings: Settings,
) -> list[dict[str, Any]]:
    """A day of new, active notes written after `start`, on the plan's existing topics
    (so they join clusters and meet old notes in the conflict scan)."""
    world, _ = _world(plan, np.random.default_rng(plan.seed))
    rng = np.random.default_rng(plan.seed + 1)
    topics = rng.integers(0, len(world.centres), size=n_new)
    noise = rng.normal(size=(n_new, DIM)) / np.sqrt(DIM) * plan.noise
    vectors = _unit(world.centres[topics] + noise)
    kinds = rng.choice([k for k, _ in KINDS], p=[p for _, p in KINDS], size=n_new)
    rows = []
    for i in range(n_new):
        created = start + timedelta(hours=float(rng.uniform(0, 23)))
        row = _row(rng, _text(rng, world, int(topics[i])), str(kinds[i]), vectors[i], created,
                   created, tenant_id=tenant_id, user_id=user_id, settings=settings)  # fmt: skip
        rows.append({**row, "status": "active", "archived_at": None, "expires_at": None})
    return rows


def _row(
    rng: np.random.Generator,
    content: str,
    kind: str,
    vector: np.ndarray,
    created: datetime,
    now: datetime,
    *,
    tenant_id: str,
    user_id: str,
    settings: Settings,
) -> dict[str, Any]:
    history = _history(rng, created, now)
    note_id = uuid.uuid4()
    archived = rng.random() < 0.1
    visibility = str(rng.choice(["open", "scoped", "private"], p=[0.7, 0.2, 0.1]))
    row: dict[str, Any] = {
        "id": note_id,
        "lineage_id": note_id,
        "version": 1,
        "tenant_id": tenant_id,
        "user_id": user_id,
        "agent_id": f"agent-{int(rng.integers(1, 4))}",
        "content": content,
        "speaker": "Alice",
        "kind": kind,
        "domain": f"d{int(rng.integers(0, 5))}",
        "visibility": visibility,
        "pinned": bool(rng.random() < 0.03),
        "status": "archived" if archived else "active",
        "importance": 0.5,
        "occurred_at": created,
        "created_at": created,
        "updated_at": created,
        "valid_from": created,
        "archived_at": created + (now - created) * float(rng.random()) if archived else None,
        "expires_at": created + timedelta(days=1) if rng.random() < 0.02 else None,
        "access_times": history[-50:],
        "access_count": len(history),
        "first_access_at": created,
        "last_access_at": history[-1],
        "half_life_hours": initial_half_life(kind, settings.activation),
        "index_text": content,
        "window_text": "",
        "embed_text": content,
        "embedding": vector,
        "window_embedding": vector,
        "embedding_model": "synthetic",
        "keywords": [],
        "tags": [],
        "metadata_": {},
    }
    holder = SimpleNamespace(**row)
    apply_terms(holder, note_terms(holder))  # type: ignore[arg-type]
    row.update(
        index_terms=holder.index_terms,
        window_terms=holder.window_terms,
        term_count=holder.term_count,
        window_term_count=holder.window_term_count,
    )
    return row


def insert_notes(session: Session, rows: list[dict[str, Any]]) -> None:
    """Set-based inserts, then the active notes' terms into the BM25 statistics."""
    for start in range(0, len(rows), BATCH):
        session.execute(insert(Note), rows[start : start + BATCH])
    active = [SimpleNamespace(**r) for r in rows if r["status"] == "active"]
    index_note_terms(session=session, notes=active)  # type: ignore[arg-type]
