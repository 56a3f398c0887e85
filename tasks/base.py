"""DbTask: one database session per task run, retries on TransientError, dead letters."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Task
from sqlalchemy.orm import Session

from memory.config import get_settings
from memory.db import session_scope
from memory.errors import TransientError
from memory.ops.dead_letters import TaskFailure, record_task_failure
from tasks.broker import muma_priority

log = logging.getLogger(__name__)


class DbTask(Task):  # type: ignore[misc]
    """Base for every MUMA task: thin wrappers over domain functions.

    Late acks plus reject-on-worker-lost mean a killed worker's task is redelivered; the
    domain functions are idempotent, so a redelivery never duplicates work. A
    TransientError is retried after `retry_delay(n)` until `pipeline.max_attempts` runs
    have failed; then `on_failure` dead-letters the work.
    """

    abstract = True
    acks_late = True
    reject_on_worker_lost = True
    retry_backoff_max = 300.0

    @property
    def max_retries(self) -> int:  # type: ignore[override]
        return get_settings().pipeline.max_attempts - 1

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except TransientError as exc:
            # Past max_retries Celery raises `exc` itself, and on_failure dead-letters it.
            raise self.retry(exc=exc, countdown=self.retry_delay(self.request.retries)) from exc

    def signature_from_request(self, *args: Any, **kwargs: Any) -> Any:
        """A retry's message, with the priority its delivery carried read back as MUMA's
        (on RabbitMQ it was published mirrored: tasks.broker)."""
        signature = super().signature_from_request(*args, **kwargs)
        delivered = signature.options.get("priority")
        signature.options["priority"] = muma_priority(delivered, self.app.conf.broker_url)
        return signature

    def retry_delay(self, retries: int) -> float:
        """Seconds before the retry after `retries` earlier retries: exponential in the
        setting's base, capped, with jitter in its upper half, so it is never zero and
        workers that failed together do not retry together."""
        base = get_settings().pipeline.retry_backoff_seconds
        ceiling = min(self.retry_backoff_max, base * 2**retries)
        return ceiling * random.uniform(0.5, 1.0)  # jitter: not a secret

    @contextmanager
    def session(self, *, autocommit: bool = False) -> Iterator[Session]:
        """The task's unit of work; `autocommit` for statements that cannot run inside a
        transaction (CREATE INDEX CONCURRENTLY)."""
        with session_scope(autocommit=autocommit) as session:
            yield session

    def on_failure(
        self,
        exc: BaseException,
        task_id: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        einfo: Any,
    ) -> None:
        """Called once the last attempt failed: one dead letter per episode concerned."""
        # The ExceptionInfo holds billiard's ExceptionWithTraceback; `.exc` is the error.
        wrapped = getattr(einfo, "exception", None)
        original = getattr(wrapped, "exc", wrapped)
        if isinstance(original, BaseException):
            exc = original
        self.dead_letter(list(args), dict(kwargs), exc, str(einfo))

    def dead_letter(
        self,
        args: list[Any],
        kwargs: dict[str, Any],
        exc: BaseException,
        traceback: str,
        episode_id: str | None = None,
    ) -> None:
        """Record dead letters in their own transaction; the episodes they concern are kept.

        With `episode_id` the failure is that episode's alone; otherwise the task's ids
        (episodes, or notes traced to their episodes) are split into a letter per episode.
        """
        raw_output = getattr(exc, "raw_output", None)
        error = f"{type(exc).__name__}: {exc}"
        if raw_output:
            error += f"\nlast model output: {raw_output[:2000]}"
        failure = TaskFailure(self.name, args, kwargs, error, traceback, self.request.retries + 1)
        try:
            with session_scope() as session:
                record_task_failure(session=session, failure=failure, episode_id=episode_id)
        except Exception:  # the dead-letter write itself failed: log, never mask the error
            log.exception("could not dead-letter task %s", self.name)
