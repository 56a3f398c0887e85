"""The `muma` console script: an invalid configuration is one line naming the key and a
non-zero exit, for every command and for `--help`, although importing the commands
builds the Celery app from the settings."""

from __future__ import annotations

import sys

from memory.errors import ConfigError


def main() -> None:
    try:
        from memory.cli.main import main as run_cli
    except ConfigError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        sys.exit(2)
    run_cli()
