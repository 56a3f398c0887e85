"""The beat schedule as data, plus the periodic fan-out tasks.

Beat only selects due work and fans out; it never loops over users doing the work itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.schedules import crontab

from memory.config import Settings, get_settings
from tasks.app import app


@dataclass(frozen=True)
class ScheduleEntry:
    name: str
    task: str
    every: timedelta | crontab
    queue: str = "maintenance"


def schedule_entries(settings: Settings) -> list[ScheduleEntry]:
    """Every periodic job, with intervals taken from settings."""
    return [
        ScheduleEntry(
            name="requeue-stuck-episodes",
            task="tasks.maintenance.requeue_stuck_episodes",
            every=timedelta(seconds=max(1, settings.pipeline.stuck_after_seconds // 2)),
        ),
    ]


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    return {
        entry.name: {
            "task": entry.task,
            "schedule": entry.every,
            "options": {"queue": entry.queue, "expires": _expiry_seconds(entry.every)},
        }
        for entry in schedule_entries(settings)
    }


def _expiry_seconds(every: timedelta | crontab) -> float:
    # A periodic run that waited longer than its own period is stale: the next one replaces it.
    return every.total_seconds() if isinstance(every, timedelta) else 3600.0


app.conf.beat_schedule = beat_schedule(get_settings())
