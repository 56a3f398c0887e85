"""`muma` loads a command's module only when that command is used: `muma --help` lists
every command from its summary without importing the service, and each summary is the
command's own."""

from __future__ import annotations

import json
import subprocess
import sys

import click

from memory.cli.main import COMMANDS, cli


def test_each_summary_is_the_commands_own_and_names_resolve() -> None:
    ctx = click.Context(cli)
    for name, (_, summary) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        assert summary == command.get_short_help_str(limit=10**6)
    assert cli.get_command(ctx, "no-such-command") is None


def test_help_imports_neither_the_database_nor_celery_nor_clustering() -> None:
    probe = (
        "import json, sys\n"
        "from memory.cli.main import cli\n"
        "try:\n"
        "    cli.main(['--help'], prog_name='muma', standalone_mode=False)\n"
        "finally:\n"
        "    print(json.dumps(sorted(m for m in sys.modules if '.' not in m)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "Commands:" in done.stdout and "tokens" in done.stdout
    assert not loaded & {"sqlalchemy", "celery", "hdbscan", "sklearn", "onnxruntime", "tasks"}


def test_every_command_shows_an_example() -> None:
    def leaves(command: click.Command, ctx: click.Context, path: str) -> list[tuple[str, str]]:
        if not isinstance(command, click.Group):
            return [(path, command.help or "")]
        found = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found += leaves(sub, click.Context(sub, parent=ctx, info_name=name), f"{path} {name}")
        return found

    helps = leaves(cli, click.Context(cli), "muma")
    assert len(helps) > 30 and not [path for path, text in helps if "Example" not in text]
