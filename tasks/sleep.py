"""Memory dynamics tasks (maintenance queue): per-user decay and sleep cycle, beat fan-outs.

Each per-user task is thin: one transaction around a domain function of
memory.consolidation.cycle (which takes the user's advisory lock), then stream events
published after the commit. The fan-outs only select users and send one task per user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.activation.sweep import decay_event_payloads
from memory.clients.llm import get_llm_client
from memory.clients.redis import get_redis
from memory.commons.events import publish_events
from memory.config import Settings, get_settings
from memory.conflicts.service import conflict_event_payloads
from memory.consolidation.cycle import (
    maintained_users,
    run_decay,
    run_sleep_cycle,
    tenant_due,
)
from memory.consolidation.idle_sessions import SessionRef, capture_idle_session, idle_sessions
from memory.consolidation.service import consolidation_event_payloads
from memory.errors import TransientError
from memory.types import utcnow
from memory.working.service import list_items, remove_items
from tasks.app import app
from tasks.base import DbTask
from tasks.pipeline import enqueue_episodes


def _clock(now: str | None) -> datetime:
    return datetime.fromisoformat(now) if now else utcnow()


@app.task(base=DbTask, bind=True, name="tasks.sleep.decay_user")
def decay_user(
    self: DbTask, tenant_id: str, user_id: str, now: str | None = None
) -> dict[str, Any]:
    """The decay sweep of one user (skipped while another maintenance run holds the user)."""
    settings = get_settings()
    with self.session() as session:
        report = run_decay(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            now=_clock(now),
            settings=settings,
        )
        events = decay_event_payloads(report) if report else []
    publish_events(events)
    return {"skipped": True} if report is None else report.counts()


@app.task(base=DbTask, bind=True, name="tasks.sleep.sleep_cycle")
def sleep_cycle(
    self: DbTask, tenant_id: str, user_id: str, now: str | None = None
) -> dict[str, Any]:
    """One user's sleep cycle: decay, consolidation, conflicts, transactive index."""
    settings = get_settings()
    with self.session() as session:
        report = run_sleep_cycle(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            now=_clock(now),
            settings=settings,
            llm=get_llm_client(settings),
        )
        events: list[dict[str, object]] = []
        if report.decay:
            events += decay_event_payloads(report.decay)
        if report.consolidation:
            events += consolidation_event_payloads(session, report.consolidation)
        if report.conflicts:
            events += conflict_event_payloads(report.conflicts)
    publish_events(events)
    return report.summary()


@app.task(base=DbTask, bind=True, name="tasks.sleep.decay_all_users")
def decay_all_users(self: DbTask) -> int:
    """Beat's decay fan-out: one decay_user task per user with active or archived notes."""
    with self.session() as session:
        users = maintained_users(session, statuses=("active", "archived"))
    for tenant_id, user_id in users:
        decay_user.apply_async((tenant_id, user_id))
    return len(users)


@app.task(base=DbTask, bind=True, name="tasks.sleep.sleep_all_users")
def sleep_all_users(self: DbTask) -> int:
    """Beat's sleep fan-out: one sleep_cycle per user whose tenant is in its sleep hour."""
    settings = get_settings()
    now = utcnow()
    with self.session() as session:
        users = maintained_users(session, statuses=("active",))
    due = [(t, u) for t, u in users if tenant_due(t, now, settings)]
    for tenant_id, user_id in due:
        sleep_cycle.apply_async((tenant_id, user_id))
    return len(due)


def idle_grace_seconds(settings: Settings) -> int:
    """Sessions expiring within two sweep intervals are promoted: at least one sweep sees
    every session before Redis drops it."""
    return 2 * settings.decay.sweep_interval_minutes * 60


@app.task(base=DbTask, bind=True, name="tasks.sleep.promote_idle_sessions")
def promote_idle_sessions(self: DbTask) -> int:
    """Beat's fan-out: one promote_session task per idle L1 session about to expire."""
    refs = idle_sessions(get_redis(), grace_seconds=idle_grace_seconds(get_settings()))
    for ref in refs:
        promote_session.apply_async((ref.tenant_id, ref.user_id, ref.session_id))
    return len(refs)


@app.task(base=DbTask, bind=True, name="tasks.sleep.promote_session")
def promote_session(self: DbTask, tenant_id: str, user_id: str, session_id: str) -> int:
    """Promote every item of one idle session (like session_end); episodes first."""
    client, scope = (
        get_redis(),
        {"tenant_id": tenant_id, "user_id": user_id, "session_id": session_id},
    )
    items = list_items(client=client, **scope)
    with self.session() as session:
        results = capture_idle_session(session=session, ref=SessionRef(**scope), items=items)
    enqueue_episodes([episode_id for episode_id, created in results if created])
    remove_items(client=client, **scope, hashes=[item.hash for item in items])
    return len(items)


def enqueue_sleep_cycle(tenant_id: str, user_id: str) -> str:
    """Send one user's sleep cycle now (POST /v1/consolidate); returns the task id.

    Fails fast with TransientError when the broker is down (nothing was started).
    """
    try:
        return str(sleep_cycle.apply_async((tenant_id, user_id), retry=False).id)
    except Exception as exc:  # kombu raises several unrelated types for a dead broker
        raise TransientError(f"could not enqueue the sleep cycle: {exc}") from exc
