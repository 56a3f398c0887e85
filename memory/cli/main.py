"""The `muma` command: one click group, one module per command group."""

from __future__ import annotations

import importlib
import sys

import click

from memory import __version__
from memory.cli.exit_codes import exit_code_of
from memory.errors import MemoryServiceError

# Each command: where it lives, and its one-line summary for `muma --help` (checked against
# the command's own help by tests/unit/test_cli_lazy.py). A command's module, and what it
# imports (the Celery app, clustering, the embedder), loads only when that command runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "agents": (
        "memory.cli.agents:agents",
        "Agents: domains they may read (scoped notes) and access to private notes.",
    ),
    "archive": (
        "memory.cli.forget:archive",
        "Archive a memory: hidden from recall, kept, restorable.",
    ),
    "backfill-sparse": (
        "memory.cli.reembed:backfill_sparse",
        "Give notes without a sparse vector theirs.",
    ),
    "bench": ("memory.cli.bench:bench", "Run a benchmark: locomo, ingest, latency or sleep."),
    "candidates": ("memory.cli.candidates:candidates", "Review memories waiting for approval."),
    "conflicts": (
        "memory.cli.sleep:conflicts",
        "Contradictions between memories: detect, list and resolve them.",
    ),
    "consolidate": (
        "memory.cli.sleep:consolidate",
        "Consolidate a user's episodic notes into knowledge notes.",
    ),
    "db": ("memory.cli.db:db", "Database schema migrations (Alembic)."),
    "dead-letters": ("memory.cli.dead_letters:dead_letters", "List and retry failed tasks."),
    "decay": (
        "memory.cli.sleep:decay",
        "Archive, prune and expire a user's notes (or preview it).",
    ),
    "doctor": (
        "memory.cli.doctor:doctor",
        "Check configuration, database, Redis, workers, embedder, sparse encoder, the notes' "
        "vector space and LLM.",
    ),
    "export": (
        "memory.cli.export:export_command",
        "Export a user's memories (json, jsonl, markdown).",
    ),
    "forget": ("memory.cli.forget:forget", "Forget a memory: erase it everywhere it went."),
    "import": ("memory.cli.export:import_command", "Import a `muma export` file (idempotent)."),
    "journal": (
        "memory.cli.journal:journal",
        "Why turns were (not) remembered; what was injected.",
    ),
    "pin": ("memory.cli.pin:pin", "Pin or unpin a memory."),
    "reembed": ("memory.cli.reembed:reembed", "Re-embed notes after the embedding model changed."),
    "restore": ("memory.cli.forget:restore", "Restore an archived memory."),
    "search": ("memory.cli.search:search", "Search a user's memories, with explanations."),
    "serve": (
        "memory.cli.serve:serve",
        "Run the API server (the Procfile's `web`): one process per core behind one port, "
        "their /metrics merged.",
    ),
    "stats": ("memory.cli.stats:stats", "Counts, activation histogram and pipeline health."),
    "sync": ("memory.cli.sync:sync", "Sync a user's memories with markdown files."),
    "tenants": ("memory.cli.tenants:tenants", "Tenants: erase one whole."),
    "tokens": (
        "memory.cli.tokens:tokens",
        "API tokens (stored as sha256; the secret is shown once).",
    ),
    "up": ("memory.cli.up:up", "Start MUMA: database, Redis, API, worker, beat and Flower."),
    "users": ("memory.cli.users:users", "Users of a tenant: erase one, follow erasures."),
}


class LazyGroup(click.Group):
    """Lists the commands from COMMANDS and imports one only when it is used, so that
    `muma --help` answers without loading the service."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attr = COMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, summary) for name, (_, summary) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
        sys.exit(exit_code_of(exc))
    except SystemExit:
        raise


if __name__ == "__main__":
    main()
