"""Domain errors. The API maps each class to one HTTP status in a single handler."""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """Base of every error MUMA raises on purpose; carries the ids it concerns."""

    status_code = 500
    # Seconds after which the same request may succeed; the API sends it as Retry-After.
    retry_after_seconds: int | None = None

    def __init__(self, message: str, **ids: Any) -> None:
        super().__init__(message)
        self.message = message
        self.ids = {k: v for k, v in ids.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "detail": self.message, **self.ids}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole (ids and a subclass's own fields, e.g. the model's last output):
        # Celery replaces an exception that does not round-trip by a bare base class.
        return (_rebuild_error, (type(self), self.message, dict(self.__dict__)))


def _rebuild_error(
    cls: type[MemoryServiceError], message: str, state: dict[str, Any]
) -> MemoryServiceError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class NotFoundError(MemoryServiceError):
    status_code = 404


class AccessDeniedError(MemoryServiceError):
    status_code = 403


class AuthenticationError(MemoryServiceError):
    status_code = 401


class InvalidInputError(MemoryServiceError):
    status_code = 422


class ConflictError(MemoryServiceError):
    status_code = 409


class TransientError(MemoryServiceError):
    """A failure worth retrying (database or broker unavailable, LLM timeout)."""

    status_code = 503
    retry_after_seconds = 2


class OverloadedError(MemoryServiceError):
    """More work is waiting than the service takes on; `retry_after_seconds` says when
    to send the request again."""

    status_code = 429

    def __init__(self, message: str, *, retry_after_seconds: int, **ids: Any) -> None:
        super().__init__(message, retry_after_seconds=retry_after_seconds, **ids)
        self.retry_after_seconds = retry_after_seconds


class ConfigError(MemoryServiceError):
    """Invalid configuration; `key` names the offending setting."""

    status_code = 500
