"""CPU per write-path stage, in process: each turn alone through every stage.

Each LoCoMo turn is captured, extracted, embedded, decided and linked by the same domain
functions the Celery tasks call, one transaction per stage, with no Celery and no other
turn in the batch: the write path's cost per turn when the workers keep up (the
phase-2 regime of `benchmarks.ingest`), without its queueing. Per stage: this process's
CPU (the embedder's own share reported apart), wall time, and the CPU the PostgreSQL
server used meanwhile (read from /proc, so coarse per call but fine over hundreds).

    .venv/bin/python -m benchmarks.write_stages --turns 400
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import BenchStack, Row, fmt, print_table, write_results
from benchmarks.turns import Turn, load_turns
from memory.clients.embedder import Embedder, get_embedder
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.pipeline import extract_episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.evolution import evolve_by_keywords
from memory.links.pipeline import link_notes
from memory.notes.embed import embed_pending_notes
from memory.notes.pipeline import decide_notes

STAGES = ("capture", "extract", "embed", "decide", "link")
WARM_UP = 40


class Stages:
    """Accumulated process CPU, wall and PostgreSQL CPU seconds per stage."""

    def __init__(self, stack: BenchStack) -> None:
        self.stack = stack
        self.reset()

    def reset(self) -> None:
        self.seconds = {name: [0.0, 0.0, 0.0] for name in STAGES}

    def run(self, name: str, work: Callable[[], Any]) -> Any:
        server = self.stack.cpu_seconds().get("postgres", 0.0)
        cpu, wall = time.process_time(), time.perf_counter()
        result = work()
        totals = self.seconds[name]
        totals[0] += time.process_time() - cpu
        totals[1] += time.perf_counter() - wall
        totals[2] += self.stack.cpu_seconds().get("postgres", 0.0) - server
        return result


class TimedEmbedder(Embedder):
    """The configured embedder, counting the CPU its own calls use."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.cpu = 0.0

    def _embed(self, texts: list[str]) -> Any:
        started = time.process_time()
        try:
            return self.inner.embed(texts)
        finally:
            self.cpu += time.process_time() - started


def run_turn(turn: Turn, stages: Stages, embedder: Embedder, tenant_id: str) -> None:
    settings = get_settings()
    episode = EpisodeInput(
        user_id=turn.user_id,
        agent_id="bench-agent",
        session_id=turn.session_id,
        role="user",
        speaker=turn.speaker,
        content=turn.text,
        occurred_at=turn.occurred_at,
        metadata=turn.metadata,
        idempotency_key=f"{uuid.uuid4().hex}:{turn.turn_id}",
    )

    def capture() -> uuid.UUID:
        with session_scope(autocommit=True) as session:
            return capture_episodes(session=session, tenant_id=tenant_id, episodes=[episode])[0][0]

    episode_id = stages.run("capture", capture)

    def extract() -> list[uuid.UUID]:
        with session_scope() as session:
            return extract_episode(
                session=session, episode_id=episode_id, settings=settings, llm=None
            )

    if not stages.run("extract", extract):
        return

    def embed() -> list[uuid.UUID]:
        with session_scope() as session:
            return embed_pending_notes(session=session, embedder=embedder, limit=64).note_ids

    note_ids = stages.run("embed", embed)

    def decide() -> list[uuid.UUID]:
        with session_scope() as session:
            outcomes = decide_notes(session=session, note_ids=note_ids, settings=settings, llm=None)
        return [o.active_id for o in outcomes if o.active_id and o.decision.action != "NOOP"]

    created = stages.run("decide", decide)

    def link() -> None:
        with session_scope() as session:
            linked = link_notes(session=session, note_ids=created, settings=settings)
            evolve_by_keywords(session=session, linked=linked)

    if created:
        stages.run("link", link)


def measure(turns: list[Turn]) -> dict[str, Any]:
    with BenchStack(workers=0, beat=False, api=False) as stack:
        embedder = TimedEmbedder(get_embedder(get_settings()))
        stages = Stages(stack)
        for turn in turns[:WARM_UP]:  # model loaded, statements prepared, caches warm
            run_turn(turn, stages, embedder, stack.tenant_id)
        stages.reset()
        embedder.cpu = 0.0
        for index, turn in enumerate(turns[WARM_UP:], start=1):
            run_turn(turn, stages, embedder, stack.tenant_id)
            if index % 100 == 0:
                print(f"  {index} turns")
    count = len(turns) - WARM_UP
    per_turn = {
        name: {
            key: 1000 * value / count
            for key, value in zip(("cpu_ms", "wall_ms", "postgres_cpu_ms"), totals, strict=True)
        }
        for name, totals in stages.seconds.items()
    }
    embedder_ms = 1000 * embedder.cpu / count
    python_ms = sum(stage["cpu_ms"] for stage in per_turn.values())
    return {
        "turns": count,
        "stages": per_turn,
        "embedder_cpu_ms": embedder_ms,
        "python_cpu_ms_without_model": python_ms - embedder_ms,
        "postgres_cpu_ms": sum(stage["postgres_cpu_ms"] for stage in per_turn.values()),
    }


def report(result: dict[str, Any]) -> None:
    rows = [
        Row(
            f"{name}: CPU / wall / PostgreSQL CPU (ms per turn)",
            " / ".join(fmt(stage[key], 2) for key in ("cpu_ms", "wall_ms", "postgres_cpu_ms")),
        )
        for name, stage in result["stages"].items()
    ]
    rows += [
        Row("embedder's own CPU (ms per turn)", fmt(result["embedder_cpu_ms"], 2)),
        Row(
            "this process without the model (ms per turn)",
            fmt(result["python_cpu_ms_without_model"], 2),
        ),
        Row("PostgreSQL CPU (ms per turn)", fmt(result["postgres_cpu_ms"], 2)),
    ]
    print_table(f"Write path per turn, each turn alone ({result['turns']} turns)", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="turns measured (after 40 warm-up)")
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo JSON (default: shared)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    turns, source = load_turns(args.turns + WARM_UP, args.data)
    print(f"turns: {source}")
    result = measure(turns)
    report(result)
    print(f"results: {write_results('write-stages', result, args.json)}")


if __name__ == "__main__":
    main()
