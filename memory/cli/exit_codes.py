"""The exit code of a command that failed on a domain error (no heavy imports: `muma
--help` loads this)."""

from __future__ import annotations

from memory.errors import ConfigError, MemoryServiceError


def exit_code_of(error: MemoryServiceError) -> int:
    """2 for what the caller can fix (bad input, configuration), 1 for the service's faults."""
    return 2 if error.status_code < 500 or isinstance(error, ConfigError) else 1
