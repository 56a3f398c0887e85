"""Write-path tasks: thin wrappers that parse ids, run one domain stage, enqueue the next.

Follow-ups are enqueued only after the stage's transaction has committed (the `with`
block has exited), so a worker never sees work that is not yet visible.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from memory.clients.embedder import get_embedder
from memory.clients.llm import get_llm_client
from memory.commons.events import publish_events
from memory.config import get_settings
from memory.episodes.pipeline import extract_episode
from memory.links.pipeline import evolve_by_keywords, evolve_with_llm, link_notes
from memory.notes.pipeline import decide_notes, embed_pending_notes, note_event_payloads
from tasks.app import app
from tasks.base import DbTask

log = logging.getLogger(__name__)


def enqueue_episodes(episode_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """Publish process_episode for each id; returns the ids that were published.

    A failure to publish (Redis down) is logged, not raised: the episodes are durable and
    stay `queued` until the periodic sweep publishes them again.
    """
    published: list[uuid.UUID] = []
    for episode_id in episode_ids:
        try:
            process_episode.apply_async((str(episode_id),), retry=False)
        except Exception as exc:  # kombu raises several unrelated types for a dead broker
            log.warning("could not enqueue episode %s: %s", episode_id, exc)
            break
        published.append(episode_id)
    return published


@app.task(base=DbTask, bind=True, name="tasks.pipeline.process_episode")
def process_episode(self: DbTask, episode_id: str) -> int:
    """Stages 1-2: extract facts and construct pending notes."""
    settings = get_settings()
    with self.session() as session:
        note_ids = extract_episode(
            session=session,
            episode_id=uuid.UUID(episode_id),
            settings=settings,
            llm=get_llm_client(settings),
        )
    if note_ids:
        embed_notes.apply_async()
    return len(note_ids)


@app.task(base=DbTask, bind=True, name="tasks.pipeline.embed_notes")
def embed_notes(self: DbTask) -> int:
    """Stage 3: embed a batch of pending notes (across episodes), then decide them."""
    settings = get_settings()
    batch = settings.embedding.batch_size * 2
    with self.session() as session:
        note_ids = embed_pending_notes(
            session=session, embedder=get_embedder(settings), limit=batch
        )
    if note_ids:
        decide.apply_async(([str(i) for i in note_ids],))
    if len(note_ids) >= batch:
        embed_notes.apply_async()  # more backlog than one batch: keep draining
    return len(note_ids)


@app.task(base=DbTask, bind=True, name="tasks.pipeline.decide")
def decide(self: DbTask, note_ids: list[str]) -> int:
    """Stages 4-5: retrieve similar notes and decide ADD/UPDATE/DELETE/NOOP."""
    settings = get_settings()
    with self.session() as session:
        outcomes = decide_notes(
            session=session,
            note_ids=[uuid.UUID(i) for i in note_ids],
            settings=settings,
            llm=get_llm_client(settings),
        )
        events = note_event_payloads(session=session, outcomes=outcomes)
    publish_events(events)
    created = [
        str(o.active_id) for o in outcomes if o.active_id and o.decision.action in ("ADD", "UPDATE")
    ]
    if created:
        link.apply_async((created,))
    return len(outcomes)


@app.task(base=DbTask, bind=True, name="tasks.pipeline.link")
def link(self: DbTask, note_ids: list[str]) -> int:
    """Stage 6: link to similar notes; evolve neighbours by keywords, or via the LLM queue."""
    settings = get_settings()
    with self.session() as session:
        linked = link_notes(
            session=session, note_ids=[uuid.UUID(i) for i in note_ids], settings=settings
        )
        if not settings.llm.configured:
            evolve_by_keywords(session=session, linked=linked)
    if settings.llm.configured and any(linked.values()):
        evolve.apply_async(({str(k): [str(v) for v in vs] for k, vs in linked.items() if vs},))
    return sum(len(v) for v in linked.values())


@app.task(base=DbTask, bind=True, name="tasks.pipeline.evolve")
def evolve(self: DbTask, linked: dict[str, list[str]]) -> int:
    """Stage 6b (llm queue): refresh linked notes' context and tags with the LLM."""
    llm = get_llm_client(get_settings())
    if llm is None:
        return 0
    with self.session() as session:
        return evolve_with_llm(
            session=session,
            linked={uuid.UUID(k): [uuid.UUID(v) for v in vs] for k, vs in linked.items()},
            llm=llm,
        )
