"""DonePoller: watches captured episodes until the pipeline has finished them.

One background thread, one autocommit connection, one query per interval for every
outstanding id (50 ms while up to 100 are outstanding, growing to 1 s at 2,000). An
episode is finished when its status is `done` or `failed`; it is searchable when an
active note cites it (`note_sources`), which is the moment the read path can return it
(decide commits the note `active` and its BM25 terms together). BacklogSampler records
where the backlog sits once a second.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psycopg

_QUERY = """
SELECT e.id::text, e.status, e.decision, extract(epoch FROM e.processed_at),
       EXISTS (SELECT 1 FROM note_sources s JOIN notes n ON n.id = s.note_id
               WHERE s.episode_id = e.id AND n.status = 'active') AS searchable
FROM episodes e
WHERE e.id = ANY(%s::uuid[]) AND e.status IN ('done', 'failed')
"""


@dataclass(frozen=True)
class Finished:
    episode_id: str
    sent_at: float  # wall clock (time.time()) when the capture request was sent
    observed_at: float  # wall clock when the poller first saw it finished
    processed_at: float | None  # wall clock the worker stamped (same machine clock)
    status: str
    decision: str | None
    searchable: bool

    @property
    def observed_seconds(self) -> float:
        return self.observed_at - self.sent_at

    @property
    def processed_seconds(self) -> float | None:
        return None if self.processed_at is None else self.processed_at - self.sent_at


class DonePoller(threading.Thread):
    def __init__(self, database_url: str, *, interval: float = 0.05) -> None:
        super().__init__(name="done-poller", daemon=True)
        self._url = database_url
        self._interval = interval
        self._lock = threading.Lock()
        self._outstanding: dict[str, float] = {}
        self._finished: dict[str, Finished] = {}
        self._halt = threading.Event()
        self.error: BaseException | None = None
        self.queries = 0

    def watch(self, episode_id: str, sent_at: float) -> None:
        with self._lock:
            if episode_id not in self._finished:
                self._outstanding[episode_id] = sent_at

    @property
    def outstanding(self) -> int:
        with self._lock:
            return len(self._outstanding)

    def finished(self, ids: list[str] | None = None) -> list[Finished]:
        with self._lock:
            if ids is None:
                return list(self._finished.values())
            return [self._finished[i] for i in ids if i in self._finished]

    def run(self) -> None:
        try:
            with psycopg.connect(self._url, autocommit=True) as conn:
                while not self._halt.is_set():
                    started = time.monotonic()
                    self._poll(conn)
                    interval = self._interval_for(self.outstanding)
                    self._halt.wait(max(0.0, interval - (time.monotonic() - started)))
        except BaseException as exc:  # surfaced to the benchmark by wait_drained
            self.error = exc

    def _interval_for(self, outstanding: int) -> float:
        """The base interval while little is outstanding; up to 1 s for thousands of ids,
        so the probe does not load PostgreSQL when latencies are seconds anyway."""
        return max(self._interval, min(1.0, outstanding * 0.0005))

    def _poll(self, conn: psycopg.Connection) -> None:
        with self._lock:
            ids = list(self._outstanding)
        if not ids:
            return
        rows = conn.execute(_QUERY, (ids,)).fetchall()
        self.queries += 1
        now = time.time()
        with self._lock:
            for episode_id, status, decision, processed, searchable in rows:
                sent = self._outstanding.pop(episode_id, None)
                if sent is None:
                    continue
                self._finished[episode_id] = Finished(
                    episode_id,
                    sent,
                    now,
                    float(processed) if processed is not None else None,
                    status,
                    decision,
                    bool(searchable),
                )

    def wait_drained(self, timeout: float, *, progress: float = 10.0) -> bool:
        """Block until nothing is outstanding (True) or the timeout passes (False)."""
        deadline = time.monotonic() + timeout
        next_report = time.monotonic() + progress
        while time.monotonic() < deadline:
            if self.error is not None:
                raise RuntimeError(f"poller failed: {self.error}") from self.error
            left = self.outstanding
            if left == 0:
                return True
            if time.monotonic() >= next_report:
                print(f"  ... {left} episodes still in the pipeline", flush=True)
                next_report += progress
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


_BACKLOG = """
SELECT (SELECT count(*) FROM episodes WHERE status = 'queued'),
       (SELECT count(*) FROM episodes WHERE status = 'processing'),
       (SELECT count(*) FROM notes WHERE status = 'pending' AND embedding IS NULL),
       (SELECT count(*) FROM notes WHERE status = 'pending' AND embedding IS NOT NULL)
"""
BACKLOG_FIELDS = (
    "t",
    "episodes_queued",
    "episodes_processing",
    "notes_to_embed",
    "notes_to_decide",
    "queue_ingest",
    "queue_embed",
)


class BacklogSampler(threading.Thread):
    """Once a second: where the backlog sits (episodes, pending notes, Redis queues)."""

    def __init__(self, database_url: str, redis_url: str, *, interval: float = 1.0) -> None:
        super().__init__(name="backlog-sampler", daemon=True)
        self._url = database_url
        self._redis_url = redis_url
        self._interval = interval
        self._halt = threading.Event()
        self.samples: list[tuple[float, ...]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        import redis

        client = redis.Redis.from_url(self._redis_url)
        try:
            with psycopg.connect(self._url, autocommit=True) as conn:
                while not self._halt.wait(self._interval):
                    row = conn.execute(_BACKLOG).fetchone() or (0, 0, 0, 0)
                    queues = (client.llen("ingest"), client.llen("embed"))
                    self.samples.append((time.time(), *map(float, row), *map(float, queues)))
        except BaseException as exc:  # reported in the results, never fatal
            self.error = exc

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)

    def between(self, start: float, end: float) -> list[dict[str, float]]:
        return [
            dict(zip(BACKLOG_FIELDS, s, strict=True)) for s in self.samples if start <= s[0] <= end
        ]
