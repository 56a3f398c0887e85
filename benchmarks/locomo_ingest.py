"""In-process LoCoMo ingest for development: the same domain stages, no HTTP or Celery.

Capture → extract/construct → embed → decide → link, run in this process in batches. It
produces the same notes as the API path (same functions, same order of turns) and takes
minutes instead of tens of minutes on a loaded machine; the benchmark's reported figures
come from the API path (benchmarks/locomo.py without --ingest-inprocess).
"""

from __future__ import annotations

import time
from collections import defaultdict

from benchmarks.locomo_data import Turn
from memory.clients.embedder import get_embedder
from memory.clients.sparse_encoder import get_sparse_encoder
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.pipeline import extract_episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.evolution import evolve_by_keywords
from memory.links.pipeline import link_notes
from memory.notes.embed import embed_pending_notes
from memory.notes.pipeline import decide_notes

BATCH = 128


def _input(turn: Turn, agent_id: str) -> EpisodeInput:
    metadata: dict[str, object] = {"dia_id": turn.dia_id}
    if turn.caption:
        metadata["blip_caption"] = turn.caption
    return EpisodeInput(
        user_id=turn.conversation,
        agent_id=agent_id,
        session_id=f"{turn.conversation}-s{turn.session}",
        role="user",
        content=turn.text,
        speaker=turn.speaker,
        occurred_at=turn.occurred_at,
        metadata=metadata,
        idempotency_key=f"{turn.conversation}:{turn.dia_id}",
    )


def ingest_inprocess(turns: list[Turn], *, tenant_id: str, agent_id: str) -> float:
    settings = get_settings()
    embedder = get_embedder(settings)
    sparse = get_sparse_encoder(settings)
    started = time.perf_counter()
    by_session: dict[tuple[str, int], list[Turn]] = defaultdict(list)
    for turn in turns:
        by_session[(turn.conversation, turn.session)].append(turn)
    episode_ids = []
    with session_scope() as session:
        for key in sorted(by_session):
            results = capture_episodes(
                session=session,
                tenant_id=tenant_id,
                episodes=[_input(t, agent_id) for t in by_session[key]],
            )
            episode_ids += [episode_id for episode_id, _ in results]
    for start in range(0, len(episode_ids), BATCH):
        with session_scope() as session:
            for episode_id in episode_ids[start : start + BATCH]:
                extract_episode(session=session, episode_id=episode_id, settings=settings, llm=None)
        print(f"extracted {min(start + BATCH, len(episode_ids))}/{len(episode_ids)}", flush=True)
    while True:
        with session_scope() as session:
            note_ids = embed_pending_notes(
                session=session, embedder=embedder, limit=BATCH, sparse_encoder=sparse
            ).note_ids
            if not note_ids:
                break
            outcomes = decide_notes(session=session, note_ids=note_ids, settings=settings, llm=None)
            active = [
                o.active_id
                for o in outcomes
                if o.active_id and o.decision.action in ("ADD", "UPDATE")
            ]
            linked = link_notes(session=session, note_ids=active, settings=settings)
            evolve_by_keywords(session=session, linked=linked)
        print(f"embedded and decided {len(note_ids)} notes", flush=True)
    return time.perf_counter() - started
