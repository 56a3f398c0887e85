"""Write-path tasks: thin wrappers that parse ids, run one domain stage, enqueue the next.

Follow-ups are enqueued only after the stage's transaction has committed (the `with`
block has exited), so a worker never sees work that is not yet visible.
"""

from __future__ import annotations

import logging
import time
import traceback
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from memory.clients.embedder import get_embedder
from memory.clients.llm import LlmClient, LlmOutputError, get_llm_client
from memory.clients.redis import get_redis
from memory.clients.sparse_encoder import get_sparse_encoder
from memory.commons.events import publish_events
from memory.config import Settings, get_settings
from memory.episodes.pipeline import claim_queued_episode, extract_episode
from memory.errors import TransientError
from memory.links.evolution import evolve_by_keywords
from memory.links.evolution_llm import evolve_with_llm
from memory.links.pipeline import link_notes
from memory.notes.embed import embed_pending_notes
from memory.notes.pipeline import decide_notes, note_event_payloads
from memory.types import utcnow
from tasks.app import app
from tasks.base import DbTask

log = logging.getLogger(__name__)


BATCH = 50
# A process_episodes task also takes along up to TAKE_ALONG episodes queued for longer
# than `pipeline.backlog_seconds` (the workers are behind): batches for the later stages
# instead of one note per task. Fresh episodes are left to their own tasks, so a burst
# still flows through embedding while it is being extracted.
TAKE_ALONG = 24
EMBED_FLAG = "muma:embed-scheduled"
# Redis message priorities (0 runs first): finish work in flight before starting new work,
# so capture-to-searchable latency stays low under a backlog.
PRIORITY_EXTRACT, PRIORITY_EMBED, PRIORITY_DECIDE = 6, 3, 0


def enqueue_episodes(episode_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """Publish process_episodes in batches; returns the ids that were published.

    A failure to publish (Redis down) is logged, not raised: the episodes are durable and
    stay `queued` until the periodic sweep publishes them again.
    """
    ids = [str(i) for i in episode_ids]
    published: list[uuid.UUID] = []
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        try:
            process_episodes.apply_async(
                (chunk,), {"queued_at": time.time()}, retry=False, priority=PRIORITY_EXTRACT
            )
        except Exception as exc:  # kombu raises several unrelated types for a dead broker
            log.warning("could not enqueue %d episodes: %s", len(chunk), exc)
            break
        published += [uuid.UUID(i) for i in chunk]
    return published


def schedule_embedding() -> None:
    """Enqueue one embed_notes unless one is already waiting (coalesces a burst).

    Runs after the extraction committed, so a broker or Redis failure here is transient:
    the task is retried (its episodes' pending notes count again and are scheduled
    then), never dead-lettered as if the episodes had failed."""
    try:
        if get_redis().set(EMBED_FLAG, "1", nx=True, ex=5):
            embed_notes.apply_async(priority=PRIORITY_EMBED)
    except Exception as exc:  # redis-py and kombu raise several unrelated types
        raise TransientError(f"could not schedule the embedding: {exc}") from exc


def publish_follow_up(task: Any, args: tuple[Any, ...] = (), **options: Any) -> None:
    """Enqueue the next stage once this one committed. A broker error here is transient:
    the task is retried (what it did is found done, and embedded notes still undecided
    come back as stale), never dead-lettered as if its work had failed."""
    try:
        task.apply_async(args, **options)
    except Exception as exc:  # redis-py and kombu raise several unrelated types
        raise TransientError(f"could not enqueue {task.name}: {exc}") from exc


@app.task(base=DbTask, bind=True, name="tasks.pipeline.process_episodes")
def process_episodes(self: DbTask, episode_ids: list[str], queued_at: float | None = None) -> int:
    """Stages 1-2 for each episode, one transaction each: extract facts, construct notes;
    then, if this task waited in the queue for `backlog_seconds` or more (or does not say
    when it was queued), up to TAKE_ALONG of the oldest backlog episodes no other worker
    holds.

    A non-transient failure of one episode dead-letters that episode alone; a transient
    one retries the task, and the episodes already done are skipped by their state guard
    (so is an episode another task took along: its own task finds it claimed or done).
    """
    settings = get_settings()
    llm = get_llm_client(settings)
    created = sum(_extract_one(self, episode_id, settings, llm)[1] for episode_id in episode_ids)
    if created:
        schedule_embedding()
    backlog_seconds = settings.pipeline.backlog_seconds
    if queued_at is not None and time.time() - queued_at < backlog_seconds:
        # Episodes queued before this task's were published before it and are already
        # taken (a worker holds or finished them): looking costs a transaction per capture.
        return created
    taken = extra = 0
    before = utcnow() - timedelta(seconds=backlog_seconds)
    while taken < TAKE_ALONG:
        claimed, notes = _extract_one(self, before, settings, llm)
        if claimed is None:
            break
        taken, extra = taken + 1, extra + notes
    if extra:
        schedule_embedding()
    return created + extra


def _extract_one(
    task: DbTask, episode: str | datetime, settings: Settings, llm: LlmClient | None
) -> tuple[str | None, int]:
    """Extract one episode in its own transaction: the given id, or the oldest backlog
    episode captured before the given time; return (its id or None, notes created)."""
    claimed = episode if isinstance(episode, str) else None
    try:
        with task.session() as session:
            if isinstance(episode, datetime):
                found = claim_queued_episode(session=session, captured_before=episode)
                if found is None:
                    return None, 0
                claimed = str(found)
            notes = extract_episode(
                session=session, episode_id=uuid.UUID(claimed), settings=settings, llm=llm
            )
            return claimed, len(notes)
    except TransientError:
        raise
    except Exception as exc:  # one bad episode must not hold up the others
        if claimed is None:
            raise
        task.dead_letter([[claimed]], {}, exc, traceback.format_exc(), claimed)
        return claimed, 0


@app.task(base=DbTask, bind=True, name="tasks.pipeline.embed_notes")
def embed_notes(self: DbTask) -> int:
    """Stage 3: embed a batch of pending notes (across episodes), then decide them."""
    settings = get_settings()
    batch = settings.embedding.batch_size * 2
    get_redis().delete(EMBED_FLAG)  # arrivals from now on schedule a fresh run
    with self.session() as session:
        done = embed_pending_notes(
            session=session,
            embedder=get_embedder(settings),
            limit=batch,
            stale_after_seconds=settings.pipeline.stuck_after_seconds,
            sparse_encoder=get_sparse_encoder(settings),
        )
    if done.note_ids:
        publish_follow_up(decide, ([str(i) for i in done.note_ids],), priority=PRIORITY_DECIDE)
    if len(done.embedded) >= batch:
        publish_follow_up(embed_notes, priority=PRIORITY_EMBED)  # more backlog: keep draining
    return len(done.embedded)


@app.task(base=DbTask, bind=True, name="tasks.pipeline.decide")
def decide(self: DbTask, note_ids: list[str]) -> int:
    """Stages 4-5: retrieve similar notes and decide ADD/UPDATE/DELETE/NOOP."""
    settings = get_settings()
    invalid: dict[uuid.UUID, LlmOutputError] = {}
    with self.session() as session:
        outcomes = decide_notes(
            session=session,
            note_ids=[uuid.UUID(i) for i in note_ids],
            settings=settings,
            llm=get_llm_client(settings),
            invalid=invalid,
        )
        events = note_event_payloads(session=session, outcomes=outcomes)
    publish_events(events)
    for note_id, exc in invalid.items():  # dead-lettered alone, after the others committed
        self.dead_letter([[str(note_id)]], {}, exc, "".join(traceback.format_exception(exc)))
    created = [
        str(o.active_id) for o in outcomes if o.active_id and o.decision.action in ("ADD", "UPDATE")
    ]
    if created:
        publish_follow_up(link, (created,), priority=PRIORITY_DECIDE)
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
        pairs = {str(k): [str(v) for v in vs] for k, vs in linked.items() if vs}
        publish_follow_up(evolve, (pairs,))
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
