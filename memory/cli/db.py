"""`muma db upgrade|downgrade|current`."""

from __future__ import annotations

import click

from memory.cli.common import console
from memory.ops.migrations import (
    current_revision,
    downgrade_database,
    head_revision,
    upgrade_database,
)


@click.group()
def db() -> None:
    """Database schema migrations (Alembic).

    \b
    Example:
      muma db upgrade
    """


@db.command()
@click.argument("revision", default="head")
def upgrade(revision: str) -> None:
    """Upgrade the schema to REVISION (default: head)."""
    upgrade_database(revision)
    console.print(f"schema at {current_revision()}")


@db.command()
@click.argument("revision", default="-1")
def downgrade(revision: str) -> None:
    """Downgrade the schema to REVISION (default: one step; 'base' removes everything)."""
    downgrade_database(revision)
    console.print(f"schema at {current_revision() or 'base'}")


@db.command()
def current() -> None:
    """Show the current and the latest schema revision."""
    console.print(f"current: {current_revision() or 'base'}  head: {head_revision()}")
