"""Raw embedding throughput on the texts the write pipeline embeds, outside the pipeline.

The pipeline (memory/notes/pipeline.py `embed_pending_notes`) embeds one text per note,
its own `embed_text` (the window vector is derived from neighbours' vectors, no embedder
call), in calls of up to `2 * batch_size` notes (tasks/pipeline.py `embed_notes`), each
split into sub-batches of `batch_size` by the embedder. This module builds the same texts
with the same domain functions (extract_facts, construct_note) and times the same call
shape.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from benchmarks.turns import Turn
from memory.clients.embedder import Embedder, get_embedder
from memory.config import Settings
from memory.episodes.extraction import extract_facts
from memory.notes.construct import construct_note


def pipeline_texts(turns: Sequence[Turn], settings: Settings) -> list[str]:
    """The `embed_text` of the note each turn becomes; turns without a note skipped."""
    out: list[str] = []
    for turn in turns:
        facts = extract_facts(
            turn.text,
            role="user",
            speaker=turn.speaker,
            occurred_at=turn.occurred_at,
            metadata=turn.metadata,
        )
        if not facts:
            continue
        draft = construct_note(
            facts[0],
            role="user",
            agent_id="bench-agent",
            explicit={},
            settings=settings,
        )
        out.append(draft.embed_text)
    return out


def raw_settings(settings: Settings, threads: int | None) -> Settings:
    """The same embedding settings, with `threads` intra-op threads (None: every CPU)."""
    embedding = settings.embedding.model_copy(update={"threads": threads})
    return settings.model_copy(update={"embedding": embedding})


def _timed(embedder: Embedder, calls: list[list[str]]) -> tuple[float, float]:
    started, cpu_started = time.perf_counter(), time.process_time()
    for texts in calls:
        embedder.embed(texts)
    return time.perf_counter() - started, time.process_time() - cpu_started


def measure_raw(texts: Sequence[str], settings: Settings) -> dict[str, Any]:
    """Texts/s (= notes/s, one text per note) of embedding `texts` in the pipeline's
    call shape."""
    embedder = get_embedder(settings)
    per_call = settings.embedding.batch_size * 2
    own = list(texts)
    embedder.embed(own[:per_call])  # load the model and warm the session
    seconds, cpu = _timed(embedder, _chunks(own, per_call))
    notes = len(own)
    return {
        "model_id": embedder.model_id,
        "threads": getattr(embedder, "intra_op_threads", None),
        "batch_size": settings.embedding.batch_size,
        "notes": notes,
        "texts": notes,
        "seconds": seconds,
        "texts_per_second": notes / seconds,
        "notes_per_second": notes / seconds,
        "cpu_seconds": cpu,
        "cpu_ms_per_note": cpu * 1000 / notes,
        "own": {
            "seconds": seconds,
            "cpu_ms_per_text": cpu * 1000 / notes,
            "mean_chars": sum(map(len, own)) / notes,
        },
    }


def _chunks(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]
