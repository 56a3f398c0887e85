"""Structured logs: one JSON object per line, carrying the request or task it belongs to.

Invariants: the ids come from context variables set by the HTTP middleware (request_id)
and by the worker's task signals (task_id, task_name), so any logger in any module gets
them without passing them around; `ContextFilter` must sit on the handler (filters on a
logger do not see records propagated from child loggers); `configure_logging` is
idempotent and leaves a process alone whose root logger someone else already set up
(pytest, an embedding application).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

REQUEST_ID: ContextVar[str | None] = ContextVar("muma_request_id", default=None)
TASK_ID: ContextVar[str | None] = ContextVar("muma_task_id", default=None)
TASK_NAME: ContextVar[str | None] = ContextVar("muma_task_name", default=None)
CONTEXT_FIELDS = ("request_id", "task_id", "task_name")
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    *CONTEXT_FIELDS,
}
_MARKER = "_muma_json_handler"


class ContextFilter(logging.Filter):
    """Copy the current request and task ids onto each record (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in zip(CONTEXT_FIELDS, (REQUEST_ID, TASK_ID, TASK_NAME), strict=True):
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        return True


class JsonFormatter(logging.Formatter):
    """{"ts", "level", "logger", "message", request/task ids, extra fields, "exc"}."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                payload[name] = value
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


def use_json(handlers: Iterable[logging.Handler]) -> None:
    """Switch existing handlers (Celery's, uvicorn's) to JSON lines with context ids."""
    for handler in handlers:
        handler.setFormatter(JsonFormatter())
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


def configure_logging(level: int = logging.INFO) -> bool:
    """JSON lines on stderr for this process; False when the root logger was already set up."""
    root = logging.getLogger()
    if any(getattr(h, _MARKER, False) for h in root.handlers):
        return True
    for name in ("uvicorn", "uvicorn.error"):
        use_json(logging.getLogger(name).handlers)
    if root.handlers:
        return False
    handler = logging.StreamHandler(sys.stderr)
    setattr(handler, _MARKER, True)
    use_json([handler])
    root.addHandler(handler)
    root.setLevel(level)
    return True
