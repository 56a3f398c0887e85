"""`muma bench NAME [ARGS...]`: run one of the benchmarks in benchmarks/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from memory.cli.options import domain_errors
from memory.errors import NotFoundError

BENCHMARKS = ("locomo", "ingest", "latency", "sleep")
ROOT = Path(__file__).resolve().parents[2]


def _benchmarks_root() -> Path:
    """The directory holding benchmarks/: the working directory first, then the checkout."""
    for root in (Path.cwd(), ROOT):
        if (root / "benchmarks" / "__init__.py").is_file():
            return root
    raise NotFoundError(
        "no benchmarks/ directory here or in the MUMA checkout; run from the repository"
    )


@click.command(
    short_help="Run a benchmark: locomo, ingest, latency or sleep.",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": False},
)
@click.argument("name", type=click.Choice(BENCHMARKS))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@domain_errors
def bench(name: str, args: tuple[str, ...]) -> None:
    """Run a benchmark (python -m benchmarks.NAME), passing ARGS through. It prints a
    table and writes its JSON results; see benchmarks/README.md.

    \b
    Examples:
      muma bench latency
      muma bench locomo -- --help
    """
    root = _benchmarks_root()
    if not (root / "benchmarks" / f"{name}.py").is_file():
        raise NotFoundError(
            f"benchmark '{name}' is not available (no benchmarks/{name}.py in {root})"
        )
    completed = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *args], cwd=root)
    if completed.returncode:
        raise SystemExit(completed.returncode)
