"""The `muma` command: one click group, one module per command group."""

from __future__ import annotations

import sys

import click

from memory import __version__
from memory.cli import db as db_commands
from memory.cli import doctor as doctor_commands
from memory.cli import tokens as token_commands
from memory.cli import up as up_commands
from memory.errors import MemoryServiceError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="muma")
def cli() -> None:
    """MUMA: multi-user, multi-agent long-term memory for AI agents.

    \b
    Start everything on this machine:   muma up
    Create an API token:                 muma tokens create --role viewer
    Check the installation:              muma doctor
    """


cli.add_command(up_commands.up)
cli.add_command(db_commands.db)
cli.add_command(token_commands.tokens)
cli.add_command(doctor_commands.doctor)


def main() -> None:
    """Entry point: domain errors become one clear line and a non-zero exit."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MemoryServiceError as exc:
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(2 if exc.status_code < 500 else 1)
    except SystemExit:
        raise


if __name__ == "__main__":
    main()
