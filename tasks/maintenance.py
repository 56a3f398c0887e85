"""Maintenance tasks: thin wrappers over domain functions, on the `maintenance` queue."""

from __future__ import annotations

import uuid
from datetime import datetime

from memory.activation.service import record_access_batch as record_access_batch_in
from memory.activation.service import record_note_accesses
from memory.config import get_settings
from memory.episodes.service import requeue_candidates
from memory.ops.health import queue_depths
from tasks.app import TASK_ROUTES, app
from tasks.base import DbTask


@app.task(base=DbTask, bind=True, name="tasks.maintenance.requeue_stuck_episodes")
def requeue_stuck_episodes(self: DbTask) -> int:
    """Re-enqueue episodes left `queued` (e.g. captured while Redis was down); those
    published before are re-sent only when no extraction message waits (their own is
    gone, not behind others)."""
    from tasks.pipeline import enqueue_episodes

    stuck_after = get_settings().pipeline.stuck_after_seconds
    waiting = queue_depths().get(TASK_ROUTES["tasks.pipeline.process_episodes"]["queue"])
    with self.session() as session:
        episode_ids = requeue_candidates(
            session=session, stuck_after_seconds=stuck_after, messages_waiting=bool(waiting)
        )
    return len(enqueue_episodes(episode_ids))


@app.task(base=DbTask, bind=True, name="tasks.maintenance.record_accesses")
def record_accesses(self: DbTask, note_ids: list[str], at: str) -> int:
    """Record that the read path used these notes (activation history, half-life). The
    API publishes `record_access_batch` now; this one drains messages queued by an API
    of an earlier version."""
    settings = get_settings()
    with self.session() as session:
        return record_note_accesses(
            session=session,
            note_ids=[uuid.UUID(i) for i in note_ids],
            at=datetime.fromisoformat(at),
            settings=settings.activation,
        )


@app.task(base=DbTask, bind=True, name="tasks.maintenance.record_access_batch")
def record_access_batch(self: DbTask, accesses: dict[str, list[str]]) -> int:
    """Record one API process's gathered accesses (memory.api.access_log): note id ->
    ISO times."""
    activation = get_settings().activation
    parsed = {
        uuid.UUID(note_id): [datetime.fromisoformat(t) for t in times]
        for note_id, times in accesses.items()
    }
    with self.session() as session:
        return record_access_batch_in(session=session, accesses=parsed, settings=activation)


@app.task(base=DbTask, bind=True, name="tasks.maintenance.build_user_graphs")
def build_user_graphs(self: DbTask) -> dict[str, int]:
    """Give large users in shared partitions of note_vectors, and large domain and kind
    slices of a user's vectors, a graph of their own, and drop those no longer needed
    (`memory.notes.graphs`)."""
    from memory.notes.graphs import update_user_graphs

    retrieval = get_settings().retrieval
    # CREATE INDEX CONCURRENTLY runs outside a transaction: an autocommit session.
    with self.session(autocommit=True) as session:
        plan = update_user_graphs(
            session=session,
            min_notes=retrieval.dedicated_graph_notes,
            slice_min_notes=retrieval.domain_graph_notes,
            slice_max_share=retrieval.domain_graph_max_share,
        )
    if plan is None:  # another run is building
        return {"created": 0, "dropped": 0, "kept": 0}
    return {"created": len(plan.create), "dropped": len(plan.drop), "kept": len(plan.keep)}


SPARSE_FILL_BATCH = 200
REBUILD_SESSIONS = 20


@app.task(base=DbTask, bind=True, name="tasks.maintenance.rebuild_derived")
def rebuild_derived(self: DbTask) -> int:
    """Rebuild a batch of notes derived under an earlier rule (memory.notes.rederive),
    then the next batch; a no-op once `muma db upgrade` has done them all."""
    from memory.notes.rederive import rebuild_derived_batch

    with self.session() as session:
        batch = rebuild_derived_batch(session=session, sessions=REBUILD_SESSIONS)
    if batch.sessions:
        rebuild_derived.apply_async()  # more may follow: keep going
    return batch.notes


@app.task(base=DbTask, bind=True, name="tasks.maintenance.fill_sparse_vectors")
def fill_sparse_vectors(self: DbTask, after_id: str | None = None) -> int:
    """Give a batch of searchable notes without a sparse vector theirs, then the next batch
    (`memory.notes.sparse_fill`); nothing without the encoder's files."""
    from memory.clients.sparse_encoder import get_sparse_encoder
    from memory.notes.sparse_fill import fill_sparse_vectors as fill

    encoder = get_sparse_encoder(get_settings())
    if encoder is None:
        return 0
    after = uuid.UUID(after_id) if after_id else None
    with self.session() as session:
        batch = fill(session=session, encoder=encoder, limit=SPARSE_FILL_BATCH, after_id=after)
    if batch.filled == SPARSE_FILL_BATCH and batch.last_id is not None:
        fill_sparse_vectors.apply_async((str(batch.last_id),))  # more may follow: keep going
    return batch.filled
