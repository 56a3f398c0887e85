"""`muma serve`: the API alone, for a platform that runs each role as its own process."""

from __future__ import annotations

import os

import click

from memory.config import get_settings
from memory.runtime.api_process import api_command, api_environment, usable_cores


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8787, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1, 64),
    help="API processes.  [default: the number of cores]",
)
def serve(host: str, port: int, workers: int | None) -> None:
    """Run the API server (the Procfile's `web`): one process per core behind one port,
    their /metrics merged. `muma up` starts the same server beside everything else.

    \b
    Example:
      muma serve --host 0.0.0.0 --port 8787 --workers 4
    """
    settings = get_settings()
    command = api_command(host, port, workers or usable_cores())
    environment = api_environment(dict(os.environ), settings.home)
    os.execve(command[0], command, environment)  # uvicorn takes this process's place
