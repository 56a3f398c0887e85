"""Pipeline status and dead letters.

A token bound to a user sees and retries only that user's part: its episodes, and the
dead letters of its episodes (another user's letter answers 404, its existence hidden).
Queue depths and the capture backlog span every user of the service and cannot be
narrowed to one, so a bound token gets neither (`queues` is empty, `backlog` absent).
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from typing import Any

from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep, require_roles
from memory.config import get_settings
from memory.db import scoped_session_for, session_scope
from memory.episodes.backlog import Backlog, measure_backlog
from memory.episodes.service import pipeline_counts
from memory.ops.dead_letters import count_dead_letters, list_dead_letters, mark_for_retry
from memory.ops.health import queue_depths
from memory.ops.stats import user_pipeline
from tasks.app import app as celery_app

router = APIRouter(tags=["pipeline"])


def _reading(principal: Principal) -> AbstractContextManager[Session]:
    """A transaction for reads; a bound token's runs under its user's row-level security
    too, so a mistake in the SQL's user filter still shows it no other user's episodes."""
    if principal.user_id is None:
        return session_scope()
    return scoped_session_for(principal.tenant_id, principal.user_id)


@router.get("/v1/pipeline")
def get_pipeline(principal: PrincipalDep) -> dict[str, Any]:
    """Episodes by status, open dead letters and queue depths for the caller's tenant, or
    for a bound token its user's episodes and dead letters and no queue depths."""
    if principal.user_id is not None:
        with _reading(principal) as session:
            own = user_pipeline(
                session=session, tenant_id=principal.tenant_id, user_id=principal.user_id
            )
        return {**own, "queues": {}}
    with session_scope() as session:
        counts = pipeline_counts(session=session, tenant_id=principal.tenant_id)
        dead = count_dead_letters(session=session, tenant_id=principal.tenant_id)
        backlog = measure_backlog(
            session=session, limit=get_settings().pipeline.max_backlog, exact=True
        )
    return {
        "episodes": counts,
        "dead_letters": dead,
        "queues": queue_depths(),
        "backlog": backlog_report(backlog),
    }


def backlog_report(backlog: Backlog) -> dict[str, Any]:
    """The service-wide backlog: episodes waiting, the limit past which captures are
    answered 429, whether it is reached, and the seconds it takes to drain (None when
    nothing finished in the last minute)."""
    drain = backlog.drain_seconds
    return {
        "queued": backlog.queued,
        "limit": backlog.limit,
        "full": backlog.full,
        "drain_seconds": None if drain is None else round(drain, 1),
    }


@router.get("/v1/dead-letters")
def get_dead_letters(
    principal: Principal = Depends(require_roles("viewer", "operator", "admin")),
) -> dict[str, Any]:
    """Failed work of the caller's tenant, or of its user for a bound token (it may hold
    content: not for agent tokens)."""
    with _reading(principal) as session:
        letters = list_dead_letters(
            session=session, tenant_id=principal.tenant_id, user_id=principal.user_id
        )
        items = [
            {
                "id": str(d.id),
                "task_name": d.task_name,
                "args": d.args,
                "kwargs": d.kwargs,
                "episode_id": str(d.episode_id) if d.episode_id else None,
                "error": d.error,
                "attempts": d.attempts,
                "first_failed_at": d.first_failed_at.isoformat(),
                "last_failed_at": d.last_failed_at.isoformat(),
            }
            for d in letters
        ]
    return {"dead_letters": items}


@router.post("/v1/dead-letters/{dead_letter_id}/retry", status_code=202)
def retry_dead_letter(
    dead_letter_id: uuid.UUID,
    principal: Principal = Depends(require_roles("operator", "admin")),
) -> dict[str, Any]:
    """Requeue the failed task with its original arguments (a bound token: its user's)."""
    with session_scope() as session:
        letter = mark_for_retry(
            session=session,
            dead_letter_id=dead_letter_id,
            tenant_id=principal.tenant_id,
            user_id=principal.user_id,
        )
        task_name, args, kwargs = letter.task_name, letter.args, letter.kwargs
    celery_app.send_task(task_name, args=args, kwargs=kwargs)
    return {"id": str(dead_letter_id), "requeued": task_name}
