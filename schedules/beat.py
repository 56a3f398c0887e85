"""The beat schedule as data, plus the periodic fan-out tasks.

Beat only selects due work and fans out; it never loops over users doing the work itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from celery.schedules import crontab

from memory.config import Settings, get_settings
from tasks.app import app


class HomeScheduler(PersistentScheduler):  # type: ignore[misc]
    """Celery's file-backed scheduler, whose file's folder is created first (a fresh
    MUMA_HOME on a platform that runs beat alone)."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()


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
        *(
            [
                ScheduleEntry(
                    name="sync-files",
                    task="tasks.sync.sync_all_users",
                    every=timedelta(minutes=settings.sync.interval_minutes),
                )
            ]
            if settings.sync.enabled
            else []
        ),
        ScheduleEntry(
            name="decay-sweep",
            task="tasks.sleep.decay_all_users",
            every=timedelta(minutes=settings.decay.sweep_interval_minutes),
        ),
        ScheduleEntry(
            name="promote-idle-sessions",
            task="tasks.sleep.promote_idle_sessions",
            every=timedelta(minutes=settings.decay.sweep_interval_minutes),
        ),
        ScheduleEntry(
            name="build-user-graphs",
            task="tasks.maintenance.build_user_graphs",
            every=timedelta(minutes=settings.retrieval.dedicated_graph_interval_minutes),
        ),
        # Notes without a sparse vector (written before it existed, or by a stage that
        # embeds on its own) get one; a pass that finds none reads the notes once.
        ScheduleEntry(
            name="fill-sparse-vectors",
            task="tasks.maintenance.fill_sparse_vectors",
            every=timedelta(days=1),
        ),
        # Notes derived under an earlier rule (an upgrade whose `muma db upgrade` did not
        # finish the rebuild): the chain of batches ends when none is left.
        ScheduleEntry(
            name="rebuild-derived",
            task="tasks.maintenance.rebuild_derived",
            every=timedelta(hours=1),
        ),
        # Erasures whose task was lost (its message gone with a broker): sent again. While
        # one is running its user's captures are refused, so it is looked for often.
        ScheduleEntry(
            name="resume-erasures",
            task="tasks.erasure.resume_erasures",
            every=timedelta(minutes=5),
        ),
        # Turn-journal injection entries past `journal.retention_days`.
        ScheduleEntry(
            name="prune-journal",
            task="tasks.journal.prune_journal",
            every=timedelta(hours=1),
        ),
        ScheduleEntry(
            name="sleep-cycle",
            task="tasks.sleep.sleep_all_users",
            every=sleep_crontab(settings),
        ),
    ]


def sleep_crontab(settings: Settings) -> crontab:
    """Daily at sleep.consolidation_hour UTC; hourly when tenants have their own time
    zones (the fan-out then picks the tenants whose local hour it is)."""
    if settings.sleep.tenant_timezones:
        return crontab(minute=0)
    return crontab(minute=0, hour=settings.sleep.consolidation_hour)


# Periodic runs go ahead of what traffic puts on the same queue (access batches, at the
# default priority 6): behind a long queue the re-publish sweep, which recovers captures
# whose message was lost, would expire before a worker got to it.
SWEEP_PRIORITY = 0


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    return {
        entry.name: {
            "task": entry.task,
            "schedule": entry.every,
            "options": {
                "queue": entry.queue,
                "expires": _expiry_seconds(entry.every),
                "priority": SWEEP_PRIORITY,
            },
        }
        for entry in schedule_entries(settings)
    }


def _expiry_seconds(every: timedelta | crontab) -> float:
    # A periodic run that waited longer than its own period is stale: the next one replaces it.
    return every.total_seconds() if isinstance(every, timedelta) else 3600.0


app.conf.beat_schedule = beat_schedule(get_settings())
