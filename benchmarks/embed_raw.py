"""Raw embedding throughput on the texts the write pipeline embeds, outside the pipeline.

The pipeline (memory/notes/pipeline.py `embed_pending_notes`) embeds two texts per note,
the note's own `embed_text` and its neighbour-window `window_text`, in calls of up to
`2 * batch_size` notes (tasks/pipeline.py `embed_notes`), each split into sub-batches of
`batch_size` by the embedder. This module builds the same texts with the same domain
functions (extract_facts, neighbour_line, construct_note) and times the same call shape.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from benchmarks.turns import Turn
from memory.clients.embedder import Embedder, get_embedder
from memory.config import Settings
from memory.episodes.extraction import extract_facts
from memory.notes.construct import construct_note, neighbour_line


def _line(turn: Turn | None) -> str:
    if turn is None:
        return ""
    return neighbour_line(
        turn.text, role="user", speaker=turn.speaker, agent_id="bench-agent", metadata=turn.metadata
    )


def pipeline_texts(turns: Sequence[Turn], settings: Settings) -> list[tuple[str, str]]:
    """(embed_text, window_text) of the note each turn becomes, as `embed_pending_notes`
    embeds them (window capped like the pipeline caps it); turns without a note skipped."""
    out: list[tuple[str, str]] = []
    for i, turn in enumerate(turns):
        facts = extract_facts(
            turn.text,
            role="user",
            speaker=turn.speaker,
            occurred_at=turn.occurred_at,
            metadata=turn.metadata,
        )
        if not facts:
            continue
        before = turns[i - 1] if i > 0 and turns[i - 1].session_id == turn.session_id else None
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        after = nxt if nxt is not None and nxt.session_id == turn.session_id else None
        draft = construct_note(
            facts[0],
            role="user",
            agent_id="bench-agent",
            explicit={},
            neighbours=[_line(before), _line(after)],
            settings=settings,
        )
        out.append((draft.embed_text, draft.window_text[: _window_cap()]))
    return out


def _window_cap() -> int | None:
    """The pipeline's cap on the embedded window text (None when it has none)."""
    from memory.notes import pipeline

    return getattr(pipeline, "WINDOW_EMBED_CHARS", None)


def raw_settings(settings: Settings, threads: int | None) -> Settings:
    """The same embedding settings, with `threads` intra-op threads (None: every CPU)."""
    embedding = settings.embedding.model_copy(update={"threads": threads})
    return settings.model_copy(update={"embedding": embedding})


def _timed(embedder: Embedder, calls: list[list[str]]) -> tuple[float, float]:
    started, cpu_started = time.perf_counter(), time.process_time()
    for texts in calls:
        embedder.embed(texts)
    return time.perf_counter() - started, time.process_time() - cpu_started


def measure_raw(pairs: Sequence[tuple[str, str]], settings: Settings) -> dict[str, Any]:
    """Texts/s and notes/s of embedding `pairs` in the pipeline's call shape.

    Own and window texts are timed in separate calls of `2 * batch_size` texts: the
    embedder sorts a call by length before sub-batching, so a mixed call of both kinds
    runs the same sub-batches, and the split shows what each kind costs.
    """
    embedder = get_embedder(settings)
    per_call = settings.embedding.batch_size * 2
    own = [p[0] for p in pairs]
    window = [p[1] for p in pairs]
    embedder.embed(own[:per_call])  # load the model and warm the session
    own_s, own_cpu = _timed(embedder, _chunks(own, per_call))
    win_s, win_cpu = _timed(embedder, _chunks(window, per_call))
    notes, seconds, cpu = len(pairs), own_s + win_s, own_cpu + win_cpu
    return {
        "model_id": embedder.model_id,
        "threads": getattr(embedder, "intra_op_threads", None),
        "batch_size": settings.embedding.batch_size,
        "notes": notes,
        "texts": 2 * notes,
        "seconds": seconds,
        "texts_per_second": 2 * notes / seconds,
        "notes_per_second": notes / seconds,
        "cpu_seconds": cpu,
        "cpu_ms_per_note": cpu * 1000 / notes,
        "own": {
            "seconds": own_s,
            "cpu_ms_per_text": own_cpu * 1000 / notes,
            "mean_chars": sum(map(len, own)) / notes,
        },
        "window": {
            "seconds": win_s,
            "cpu_ms_per_text": win_cpu * 1000 / notes,
            "mean_chars": sum(map(len, window)) / notes,
        },
    }


def _chunks(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]
