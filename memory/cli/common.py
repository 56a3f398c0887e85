"""Helpers shared by the CLI command modules."""

from __future__ import annotations

from rich.console import Console

from memory.config import get_settings
from memory.errors import ConfigError
from memory.ops.migrations import current_revision, head_revision
from memory.runtime.embedded import pg_data_dir

console = Console()
err_console = Console(stderr=True)


def require_store() -> None:
    """An embedded home that `muma up` never ran in holds no store: say so, instead of
    starting a server there (an empty one, initialised for nothing)."""
    settings = get_settings()
    if settings.embedded_database and not pg_data_dir(settings.home).exists():
        raise ConfigError(
            f"no MUMA store in {settings.home}: start one there with `muma up`, set MUMA_HOME "
            "to the home `muma up` runs in, or set MUMA_DATABASE_URL"
        )


def require_schema() -> None:
    """Fail with a clear message when there is no store or it is not migrated to head."""
    require_store()
    current, head = current_revision(), head_revision()
    if current != head:
        raise ConfigError(
            f"database schema is at {current or 'nothing'}, expected {head}: run `muma db upgrade`"
        )
