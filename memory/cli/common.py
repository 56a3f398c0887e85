"""Helpers shared by the CLI command modules."""

from __future__ import annotations

from rich.console import Console

from memory.errors import ConfigError
from memory.ops.migrations import current_revision, head_revision

console = Console()
err_console = Console(stderr=True)


def require_schema() -> None:
    """Fail with a clear message when the database is not migrated to head."""
    current, head = current_revision(), head_revision()
    if current != head:
        raise ConfigError(
            f"database schema is at {current or 'nothing'}, expected {head}: run `muma db upgrade`"
        )
