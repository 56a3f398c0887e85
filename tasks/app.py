"""The Celery application: JSON only, late acks, one prefetch, a queue per area."""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup, worker_process_init
from kombu import Queue

from memory.clients.broker import broker_url
from memory.config import Settings, get_settings
from tasks.broker import DEFAULT_PRIORITY, broker_settings

log = logging.getLogger(__name__)

QUEUES = ("ingest", "embed", "llm", "maintenance")
TASK_MODULES = [
    "tasks.pipeline",
    "tasks.maintenance",
    "tasks.sync",
    "tasks.sleep",
    "tasks.erasure",
    "tasks.journal",
    "schedules.beat",
]

# Each task is routed by its module: one queue per area of work (DESIGN.md §1).
TASK_ROUTES: dict[str, dict[str, str]] = {
    "tasks.pipeline.process_episodes": {"queue": "ingest"},
    "tasks.pipeline.embed_notes": {"queue": "embed"},
    "tasks.pipeline.decide": {"queue": "ingest"},
    "tasks.pipeline.link": {"queue": "ingest"},
    "tasks.pipeline.evolve": {"queue": "llm"},
    "tasks.maintenance.*": {"queue": "maintenance"},
    "tasks.sync.*": {"queue": "maintenance"},
    "tasks.sleep.*": {"queue": "maintenance"},
    "tasks.erasure.*": {"queue": "maintenance"},
    "tasks.journal.*": {"queue": "maintenance"},
    "schedules.beat.*": {"queue": "maintenance"},
}


def celery_config(settings: Settings) -> dict[str, Any]:
    url = broker_url(settings)
    return {
        "broker_url": url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_default_queue": "ingest",
        "task_queues": [Queue(name) for name in QUEUES],
        "task_routes": TASK_ROUTES,
        "broker_connection_retry_on_startup": True,
        # Message priorities 0 (first) to 9 on either broker (tasks.broker); see
        # tasks.pipeline for who gets which.
        **broker_settings(url),
        "task_default_priority": DEFAULT_PRIORITY,
        # Publishing from the API must fail fast when Redis is down (the episode is durable);
        # tasks.pipeline.enqueue_episodes publishes with retry=False.
        "broker_connection_timeout": 2,
        "timezone": "UTC",
        "enable_utc": True,
        # Beat keeps its last-run times in a file. Celery's default puts it in the working
        # directory, where beat cannot start when that is read-only (the image's /app);
        # under MUMA_HOME, created if missing (schedules.beat.HomeScheduler).
        "beat_schedule_filename": str(settings.home / "celerybeat-schedule"),
        "beat_scheduler": "schedules.beat:HomeScheduler",
        # Celery's default: task events only while a monitor asks for them. Flower turns
        # them on in every worker when it starts (and again every few seconds), so its
        # task views still fill; without a monitor, each task skips three Redis publishes
        # (received, started, succeeded) that nothing reads.
        "worker_send_task_events": False,
        # No extra "task-sent" event per publish: it costs a Redis write on the capture path;
        # Flower still shows received/started/succeeded from the worker events.
        "task_send_sent_event": False,
    }


def create_celery_app(settings: Settings | None = None) -> Celery:
    # The AMQP class publishes MUMA's priorities as the broker reads them (tasks.broker).
    app = Celery("muma", include=TASK_MODULES, amqp="tasks.broker:BrokerAMQP")
    app.conf.update(celery_config(settings or get_settings()))
    return app


app = create_celery_app()


@celeryd_after_setup.connect
def _yield_cpu_to_requests(**_: Any) -> None:
    # Once logging is set up and before the pool forks: its processes inherit the
    # priority, and each lowers its database backends as it connects
    # (memory.runtime.priority).
    from memory.runtime.priority import lower_cpu_priority

    for change in lower_cpu_priority(get_settings().pipeline.worker_nice):
        log.info("worker CPU priority: %s", change)


@worker_process_init.connect
def _dispose_inherited_pools(**_: Any) -> None:
    # A forked worker child must not share its parent's database sockets.
    from memory.db import dispose_engines

    dispose_engines(close=False)


# Task durations into Redis and JSON worker logs with task ids (signal handlers only).
import tasks.metrics  # noqa: E402, F401
