"""DbTask: one database session per task run, retries on TransientError, dead letters."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Task
from sqlalchemy.orm import Session

from memory.config import get_settings
from memory.db import session_scope
from memory.errors import TransientError
from memory.ops.dead_letters import record_dead_letter

log = logging.getLogger(__name__)


class DbTask(Task):  # type: ignore[misc]
    """Base for every MUMA task: thin wrappers over domain functions.

    Late acks plus reject-on-worker-lost mean a killed worker's task is redelivered; the
    domain functions are idempotent, so a redelivery never duplicates work.
    """

    abstract = True
    acks_late = True
    reject_on_worker_lost = True
    autoretry_for = (TransientError,)
    retry_backoff = True
    retry_backoff_max = 300
    retry_jitter = True
    max_retries = get_settings().pipeline.max_attempts - 1

    @contextmanager
    def session(self) -> Iterator[Session]:
        with session_scope() as session:
            yield session

    def on_failure(
        self,
        exc: BaseException,
        task_id: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        einfo: Any,
    ) -> None:
        """Called once the last attempt failed: keep everything needed to retry it."""
        # Celery may hand over a serialisable stand-in; the ExceptionInfo keeps the original.
        exc = getattr(einfo, "exception", None) or exc
        episode_id = kwargs.get("episode_id") or (args[0] if args and _is_uuid(args[0]) else None)
        self.dead_letter(list(args), dict(kwargs), exc, str(einfo), episode_id)

    def dead_letter(
        self,
        args: list[Any],
        kwargs: dict[str, Any],
        exc: BaseException,
        traceback: str,
        episode_id: Any = None,
    ) -> None:
        """Record a dead letter in its own transaction; the episode it concerns is kept."""
        raw_output = getattr(exc, "raw_output", None)
        error = f"{type(exc).__name__}: {exc}"
        if raw_output:
            error += f"\nlast model output: {raw_output[:2000]}"
        try:
            with session_scope() as session:
                record_dead_letter(
                    session=session,
                    task_name=self.name,
                    args=args,
                    kwargs=kwargs,
                    error=error,
                    traceback=traceback,
                    attempts=self.request.retries + 1,
                    episode_id=uuid.UUID(str(episode_id)) if episode_id else None,
                )
        except Exception:  # the dead-letter write itself failed: log, never mask the error
            log.exception("could not dead-letter task %s", self.name)


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
