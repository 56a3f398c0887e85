"""Where the database is: MUMA_DATABASE_URL, else the embedded server of `$MUMA_HOME`.

The embedded server's attach is registered by `memory.runtime.embedded` as it is imported
(the CLI, the API, the workers and the tests all import it), so that the database layer
never imports the runtime that starts servers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memory.config import Settings, get_settings
from memory.errors import ConfigError

_EMBEDDED_DATABASE: list[Callable[[Path], str]] = []


def sqlalchemy_url(url: str) -> str:
    """Normalise a libpq-style URL to the psycopg 3 dialect."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def use_embedded_database(attach: Callable[[Path], str]) -> None:
    _EMBEDDED_DATABASE[:] = [attach]


def resolve_database_url(settings: Settings | None = None) -> str:
    """The configured URL, else the embedded server of `$MUMA_HOME` (started if needed)."""
    settings = settings or get_settings()
    if settings.database_url:
        return sqlalchemy_url(settings.database_url)
    if not _EMBEDDED_DATABASE:
        raise ConfigError("no database: set MUMA_DATABASE_URL (no embedded server is loaded)")
    return sqlalchemy_url(_EMBEDDED_DATABASE[0](settings.home))
