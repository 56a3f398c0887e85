"""Prometheus metrics: HTTP latency (in the API process), task durations (recorded by the
workers into Redis) and state read from PostgreSQL and Redis at scrape time.

Invariants:
- Workers are separate processes; they never keep metrics in memory. Each finished task
  adds its duration to a Redis hash per task name (count, sum and cumulative bucket
  counts), so every worker, pool process and restart adds to the same series, and the
  API's /metrics exports them as one histogram per task.
- Gauges computed from the database are scoped to the scraping token's tenant (nothing
  crosses tenants); queue depths, HTTP latency and task durations are service-wide and
  carry no tenant data.
- Decay and consolidation outcomes are counted from the audit log: an event whose
  action starts with `decay.`/`consolidation.`, or whose actor is `decay`/`consolidation`,
  is one outcome labelled with the last part of its action (the decay sweep records
  note.archived/note.expired/note.pruned as actor `decay`, consolidation records
  note.consolidated/note.updated as actor `consolidation`).
- A scrape never fails because one source is down: that source's families are left out
  and `muma_scrape_source_up{source}` says which.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Histogram,
    ProcessCollector,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from memory.config import get_settings
from memory.conflicts.models import Conflict
from memory.db import session_scope
from memory.episodes.backlog import measure_backlog
from memory.episodes.models import Episode
from memory.notes.models import Note
from memory.ops.health import queue_depths
from memory.ops.models import AuditEvent, DeadLetter
from memory.types import EPISODE_STATUSES, NOTE_STATUSES

log = logging.getLogger(__name__)

TASK_KEY_PREFIX = "muma:metrics:task:"
TASK_NAMES_KEY = "muma:metrics:tasks"
TASK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
OUTCOME_FAMILIES = {
    "decay": ("archived", "expired", "pruned"),
    "consolidation": ("consolidated", "updated"),
}

HTTP_REGISTRY = CollectorRegistry(auto_describe=True)
HTTP_LATENCY = Histogram(
    "muma_http_request_duration_seconds",
    "HTTP request latency by method, route template and status code.",
    ["method", "route", "status"],
    buckets=HTTP_BUCKETS,
    registry=HTTP_REGISTRY,
)
# Several API processes (`muma up --api-workers`, uvicorn --workers) share one port, and a
# scrape reaches one of them: with prometheus_client's PROMETHEUS_MULTIPROC_DIR set (muma
# up sets it), each writes its samples to a file there and every scrape merges them all.
MULTIPROCESS = values.ValueClass is not values.MutexValue
if not MULTIPROCESS:  # one process: its CPU and memory are the API's
    ProcessCollector(registry=HTTP_REGISTRY)


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    HTTP_LATENCY.labels(method, route, str(status)).observe(seconds)


# --- task durations, written by workers -------------------------------------------------


def _bucket_field(le: float) -> str:
    return f"le:{le}"


def record_task_duration(client: Any, task_name: str, seconds: float, state: str) -> None:
    """Add one finished task run to its Redis hash (one round trip, no transaction)."""
    key = TASK_KEY_PREFIX + task_name
    pipe = client.pipeline(transaction=False)
    pipe.sadd(TASK_NAMES_KEY, task_name)
    pipe.hincrby(key, "count", 1)
    pipe.hincrbyfloat(key, "sum", seconds)
    pipe.hincrby(key, f"state:{state}", 1)
    for le in TASK_BUCKETS:
        if seconds <= le:
            pipe.hincrby(key, _bucket_field(le), 1)
    pipe.execute()


def read_task_metrics(client: Any) -> dict[str, dict[str, Any]]:
    """{task: {"count", "sum", "buckets": {le: cumulative n}, "states": {state: n}}}."""
    names = sorted(str(n) for n in client.smembers(TASK_NAMES_KEY))
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(TASK_KEY_PREFIX + name)
    out: dict[str, dict[str, Any]] = {}
    for name, raw in zip(names, pipe.execute(), strict=True):
        fields = {str(k): str(v) for k, v in raw.items()}
        out[name] = {
            "count": int(fields.get("count", 0)),
            "sum": float(fields.get("sum", 0.0)),
            "buckets": {le: int(fields.get(_bucket_field(le), 0)) for le in TASK_BUCKETS},
            "states": {
                k.split(":", 1)[1]: int(v) for k, v in fields.items() if k.startswith("state:")
            },
        }
    return out


def _task_families(client: Any) -> list[Metric]:
    durations = HistogramMetricFamily(
        "muma_task_duration_seconds",
        "Celery task (pipeline stage and maintenance) run time, from all workers.",
        labels=["task"],
    )
    runs = CounterMetricFamily(
        "muma_task_runs", "Finished task runs by final state.", labels=["task", "state"]
    )
    for name, data in read_task_metrics(client).items():
        buckets = [(str(le), float(n)) for le, n in data["buckets"].items()]
        buckets.append(("+Inf", float(data["count"])))
        durations.add_metric([name], buckets, sum_value=data["sum"])
        for state, n in sorted(data["states"].items()):
            runs.add_metric([name, state], float(n))
    return [durations, runs]


# --- state read at scrape time ----------------------------------------------------------


def _grouped(session: Session, column: Any, *where: Any) -> dict[str, int]:
    rows = session.execute(select(column, func.count()).where(*where).group_by(column))
    return {str(k): int(n) for k, n in rows}


def _outcomes(session: Session, tenant_id: str, family: str) -> dict[str, int]:
    rows = session.execute(
        select(AuditEvent.action, func.count())
        .where(
            AuditEvent.tenant_id == tenant_id,
            or_(AuditEvent.action.like(f"{family}.%"), AuditEvent.actor == family),
        )
        .group_by(AuditEvent.action)
    )
    counts = dict.fromkeys(OUTCOME_FAMILIES[family], 0)
    for action, n in rows:
        outcome = str(action).rsplit(".", 1)[-1]
        counts[outcome] = counts.get(outcome, 0) + int(n)
    return counts


def _database_families(session: Session, tenant_id: str) -> list[Metric]:
    episodes = GaugeMetricFamily("muma_episodes", "Episodes by pipeline status.", labels=["status"])
    counts = dict.fromkeys(EPISODE_STATUSES, 0)
    counts.update(_grouped(session, Episode.status, Episode.tenant_id == tenant_id))
    for status, n in counts.items():
        episodes.add_metric([status], n)
    letters = GaugeMetricFamily("muma_dead_letters", "Dead-lettered tasks.", labels=["state"])
    state = case((DeadLetter.requeued_at.is_(None), "open"), else_="requeued")
    dead = {"open": 0, "requeued": 0}
    dead.update(_grouped(session, state, DeadLetter.tenant_id == tenant_id))
    for name, n in dead.items():
        letters.add_metric([name], n)
    notes = GaugeMetricFamily("muma_notes", "Note rows by status.", labels=["status"])
    note_counts = dict.fromkeys(NOTE_STATUSES, 0)
    note_counts.update(_grouped(session, Note.status, Note.tenant_id == tenant_id))
    for status, n in note_counts.items():
        notes.add_metric([status], n)
    conflicts = GaugeMetricFamily("muma_conflicts", "Conflicts by status.", labels=["status"])
    conflict_counts = {"open": 0, "resolved": 0}
    conflict_counts.update(_grouped(session, Conflict.status, Conflict.tenant_id == tenant_id))
    for status, n in conflict_counts.items():
        conflicts.add_metric([status], n)
    families: list[Metric] = [episodes, letters, notes, conflicts, *_backlog_families(session)]
    for family in OUTCOME_FAMILIES:
        counter = CounterMetricFamily(
            f"muma_{family}_outcomes", f"{family.title()} outcomes (audit log).", labels=["outcome"]
        )
        for outcome, n in sorted(_outcomes(session, tenant_id, family).items()):
            counter.add_metric([outcome], n)
        families.append(counter)
    return families


def _backlog_families(session: Session) -> list[Metric]:
    """Service-wide, like the queue depths: captures wait for every tenant's workers."""
    backlog = measure_backlog(
        session=session, limit=get_settings().pipeline.max_backlog, exact=True
    )
    queued = GaugeMetricFamily(
        "muma_capture_backlog", "Episodes waiting for extraction (service-wide)."
    )
    queued.add_metric([], backlog.queued)
    limit = GaugeMetricFamily(
        "muma_capture_backlog_limit", "Backlog at which captures are answered 429 (0: never)."
    )
    limit.add_metric([], backlog.limit)
    families: list[Metric] = [queued, limit]
    drain = backlog.drain_seconds
    if drain is not None:
        seconds = GaugeMetricFamily(
            "muma_capture_backlog_drain_seconds",
            "Seconds to drain the backlog at the last minute's pace.",
        )
        seconds.add_metric([], drain)
        families.append(seconds)
    return families


def _queue_family() -> tuple[list[Metric], bool]:
    depths = queue_depths()
    gauge = GaugeMetricFamily("muma_queue_depth", "Messages waiting per queue.", labels=["queue"])
    for queue, depth in depths.items():
        if depth is not None:
            gauge.add_metric([queue], depth)
    return [gauge], all(d is not None for d in depths.values())


class ScrapeCollector(Collector):
    """The families computed at scrape time for one tenant."""

    def __init__(self, tenant_id: str, redis_factory: Callable[[], Any]) -> None:
        self.tenant_id = tenant_id
        self.redis_factory = redis_factory

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "muma_scrape_source_up", "Whether a source answered this scrape.", labels=["source"]
        )
        queues, redis_ok = _queue_family()
        yield from queues
        sources = {"redis": redis_ok, "database": True, "task_metrics": True}
        try:
            with session_scope() as session:
                yield from _database_families(session, self.tenant_id)
        except Exception as exc:  # a scrape reports a dead source instead of failing
            log.warning("metrics: database unavailable: %s", exc)
            sources["database"] = False
        try:
            yield from _task_families(self.redis_factory())
        except Exception as exc:
            log.warning("metrics: task metrics unavailable: %s", exc)
            sources["task_metrics"] = False
        for source, ok in sources.items():
            up.add_metric([source], 1.0 if ok else 0.0)
        yield up


def render_metrics(tenant_id: str, redis_factory: Callable[[], Any]) -> bytes:
    """The Prometheus text exposition: HTTP/process series plus the scrape-time ones."""
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(ScrapeCollector(tenant_id, redis_factory))
    http = HTTP_REGISTRY
    if MULTIPROCESS:
        http = CollectorRegistry()
        multiprocess.MultiProcessCollector(http)
    return generate_latest(http) + generate_latest(scrape)
