"""`muma export` and `muma import`: a user's whole memory to a file and back."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import click
from rich.table import Table

from memory.cli.common import console, require_schema
from memory.cli.options import (
    CLI_ACTOR,
    agent_option,
    domain_errors,
    progress_bar,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.db import session_scope
from memory.errors import InvalidInputError
from memory.ops.export import FORMATS, export_chunks
from memory.ops.export_files import read_export
from memory.ops.imports import import_bundle
from memory.ops.migrations import rebuild_derived


@contextlib.contextmanager
def _output(path: str) -> Iterator[TextIO]:
    """stdout for '-', else a temporary file renamed over PATH only when complete."""
    if path == "-":
        yield click.get_text_stream("stdout")
        return
    target = Path(path)
    if target.is_dir():
        raise InvalidInputError(f"{target} is a directory; give a file name")
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".part")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {target}: {exc}") from exc
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            yield out
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@click.command(name="export", short_help="Export a user's memories (json, jsonl, markdown).")
@user_option
@tenant_option
@agent_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True)
@click.option("--output", "-o", required=True, help="File to write ('-' for stdout).")
@domain_errors
def export_command(
    user_id: str, tenant: str | None, agent_id: str | None, fmt: str, output: str
) -> None:
    """Export a user's memories with their full history, links, provenance and access
    history. `muma import` reads any of the formats back.

    \b
    Examples:
      muma export --user alice --format jsonl --output alice.jsonl
      muma export --user alice --format markdown --output alice.md
    """
    require_schema()
    counts: dict[str, int] = {}
    with session_scope() as session, progress_bar() as bar:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        task = bar.add_task(f"exporting {user_id}", total=None)

        def tick(table: str) -> None:
            counts[table] = counts.get(table, 0) + 1
            bar.advance(task)

        with _output(output) as out:
            for chunk in export_chunks(session=session, viewer=viewer, fmt=fmt, on_record=tick):
                out.write(chunk)
    if output != "-":
        summary = ", ".join(f"{n} {t}" for t, n in counts.items()) or "nothing"
        console.print(f"wrote {output}: {summary}")


@click.command(name="import", short_help="Import a `muma export` file (idempotent).")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--tenant", default=None, help="Import into this tenant (default: the file's).")
@domain_errors
def import_command(path: Path, tenant: str | None) -> None:
    """Import a file written by `muma export` (json, jsonl or markdown). Ids, versions,
    links and history are kept; importing the same file again changes nothing.

    \b
    Examples:
      muma import alice.jsonl
      muma import alice.json --tenant staging
    """
    require_schema()
    bundle = read_export(path)
    total = sum(bundle.counts().values())
    with progress_bar() as bar:
        task = bar.add_task(f"importing {bundle.header['user_id']}", total=total)
        with session_scope() as session:
            result = import_bundle(
                session=session,
                bundle=bundle,
                tenant_id=tenant,
                actor=CLI_ACTOR,
                progress=lambda _table, n: bar.advance(task, n),
            )
    table = Table("table", "rows", "new")
    for name, numbers in result.items():
        table.add_row(name, str(numbers["rows"]), str(numbers["inserted"]))
    console.print(table)
    tenant_name = tenant or bundle.header["tenant_id"]
    console.print(f"imported {bundle.header['user_id']} into tenant {tenant_name}")
    rebuild_derived(console.print)
