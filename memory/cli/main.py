"""The `muma` command: one click group, one module per command group."""

from __future__ import annotations

import sys

import click

from memory import __version__
from memory.cli import agents as agent_commands
from memory.cli import bench as bench_commands
from memory.cli import candidates as candidate_commands
from memory.cli import db as db_commands
from memory.cli import dead_letters as dead_letter_commands
from memory.cli import doctor as doctor_commands
from memory.cli import export as export_commands
from memory.cli import forget as forget_commands
from memory.cli import journal as journal_commands
from memory.cli import pin as pin_commands
from memory.cli import reembed as reembed_commands
from memory.cli import search as search_commands
from memory.cli import serve as serve_commands
from memory.cli import sleep as sleep_commands
from memory.cli import stats as stats_commands
from memory.cli import sync as sync_commands
from memory.cli import tenants as tenant_commands
from memory.cli import tokens as token_commands
from memory.cli import up as up_commands
from memory.cli import users as user_commands
from memory.errors import MemoryServiceError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="muma")
def cli() -> None:
    """MUMA: multi-user, multi-agent long-term memory for AI agents.

    \b
    Start everything on this machine:   muma up
    Create an API token:                 muma tokens create --role viewer
    Check the installation:              muma doctor
    What a user's memory holds:          muma stats --user alice
    Search it, with explanations:        muma search --user alice "sister"
    Why turns were (not) remembered:     muma journal --user alice --session s1
    Review memories awaiting approval:   muma candidates list --user alice
    Back it up, restore it:              muma export --user alice -o a.jsonl; muma import a.jsonl
    Edit memories as markdown files:     muma sync --user alice
    Preview forgetting, consolidate:     muma decay --user alice --dry-run
    Every command has examples:          muma COMMAND --help
    """


cli.add_command(up_commands.up)
cli.add_command(serve_commands.serve)
cli.add_command(db_commands.db)
cli.add_command(token_commands.tokens)
cli.add_command(doctor_commands.doctor)
cli.add_command(agent_commands.agents)
cli.add_command(stats_commands.stats)
cli.add_command(search_commands.search)
cli.add_command(journal_commands.journal)
cli.add_command(candidate_commands.candidates)
cli.add_command(export_commands.export_command)
cli.add_command(export_commands.import_command)
cli.add_command(forget_commands.forget)
cli.add_command(forget_commands.archive)
cli.add_command(forget_commands.restore)
cli.add_command(pin_commands.pin)
cli.add_command(dead_letter_commands.dead_letters)
cli.add_command(reembed_commands.reembed)
cli.add_command(reembed_commands.backfill_sparse)
cli.add_command(sync_commands.sync)
cli.add_command(bench_commands.bench)
cli.add_command(sleep_commands.decay)
cli.add_command(sleep_commands.consolidate)
cli.add_command(sleep_commands.conflicts)
cli.add_command(user_commands.users)
cli.add_command(tenant_commands.tenants)


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
        click.echo(f"Error: {exc.message}", err=True)
        sys.exit(2 if exc.status_code < 500 else 1)
    except SystemExit:
        raise


if __name__ == "__main__":
    main()
