"""Worker-side observability: task durations into Redis, task ids in JSON log lines.

Imported by tasks/app.py, so every process that loads the Celery app registers these
handlers (they only fire in workers). Invariants: recording a metric is best effort and
never fails, delays or retries a task (short Redis timeouts, every error swallowed and
logged at debug); the task context variables are set in prerun and reset in postrun, so
a log line outside a task never carries a stale task id.
"""

from __future__ import annotations

import logging
import time
from contextvars import Token
from typing import Any

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
)

from memory.ops.logs import TASK_ID, TASK_NAME, use_json

log = logging.getLogger(__name__)
_running: dict[str, tuple[float, Token[str | None], Token[str | None]]] = {}


@task_prerun.connect
def _task_started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task_id is None:
        return
    name = getattr(task, "name", None)
    _running[task_id] = (time.perf_counter(), TASK_ID.set(task_id), TASK_NAME.set(name))


@task_postrun.connect
def _task_finished(
    task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any
) -> None:
    started = _running.pop(task_id or "", None)
    if started is None:
        return
    began, id_token, name_token = started
    elapsed = time.perf_counter() - began
    try:
        _record(getattr(task, "name", "unknown"), elapsed, state or "UNKNOWN")
    finally:
        _reset(name_token, id_token)


def _reset(name_token: Token[str | None], id_token: Token[str | None]) -> None:
    try:
        TASK_NAME.reset(name_token)
        TASK_ID.reset(id_token)
    except ValueError:  # postrun ran in another context (custom pools): clear instead
        TASK_NAME.set(None)
        TASK_ID.set(None)


def _record(task_name: str, seconds: float, state: str) -> None:
    from memory.clients.redis import get_redis
    from memory.ops.metrics import record_task_duration

    try:
        record_task_duration(get_redis(), task_name, seconds, state)
    except Exception as exc:  # metrics must never break a task
        log.debug("could not record task metrics for %s: %s", task_name, exc)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _json_logs(logger: logging.Logger | None = None, **_: Any) -> None:
    """Celery's worker and task loggers write JSON lines with task_id and task_name."""
    if logger is not None:
        use_json(logger.handlers)
