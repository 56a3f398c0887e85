"""`muma up`."""

from __future__ import annotations

import sys
from dataclasses import replace

import click

from memory.cli.common import console
from memory.config import get_settings
from memory.runtime.up import UpOptions, run_up


@click.command()
@click.option("--port", default=8787, show_default=True, help="API port.")
@click.option("--flower-port", default=5555, show_default=True, help="Flower port.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Celery worker concurrency.",
)
@click.option(
    "--api-workers",
    default=None,
    type=click.IntRange(1, 64),
    help="API processes.  [default: the number of cores]",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
def up(port: int, flower_port: int, workers: int, api_workers: int | None, host: str) -> None:
    """Start MUMA: database, Redis, API, worker, beat and Flower.

    With MUMA_DATABASE_URL / MUMA_REDIS_URL unset, an embedded PostgreSQL (pgvector) and
    an embedded Redis run under $MUMA_HOME (default ~/.local/share/muma).

    \b
    Example:
      muma up --port 8787 --workers 2 --api-workers 2
    """
    options = UpOptions(port=port, flower_port=flower_port, workers=workers, host=host)
    if api_workers is not None:
        options = replace(options, api_workers=api_workers)
    code = run_up(get_settings(), options, lambda line: console.print(f"[bold]muma[/] {line}"))
    sys.exit(code)
