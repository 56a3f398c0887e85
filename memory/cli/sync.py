"""`muma sync --user U`: sync a user's notes with markdown files, both ways, now."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import click

from memory.cli.common import console, require_schema
from memory.cli.options import domain_errors, json_option, tenant_of, tenant_option, user_option
from memory.sync.plan import SyncReport
from tasks.sync import run_user_sync

WAIT_POLL_SECONDS = 0.5
LABELS = {
    "written": "written from MUMA",
    "applied": "edits stored as new versions",
    "captured": "new files sent to the write path",
    "forgotten": "deleted files forgotten",
    "removed": "files removed (memory gone or merged)",
    "conflicts": "conflicts",
    "pending": "still in the write path",
    "deferred": "changed during the sync (next run)",
    "errors": "errors",
}


@click.command(short_help="Sync a user's memories with markdown files.")
@user_option
@tenant_option
@click.option(
    "--dir",
    "root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Sync root (default: sync.dir, else $MUMA_HOME/sync); files go to ROOT/<user>/.",
)
@click.option(
    "--wait",
    default=0.0,
    type=click.FloatRange(0, 600),
    help="Seconds to wait for new files to become memories, then sync again.",
)
@json_option
@domain_errors
def sync(user_id: str, tenant: str | None, root: Path | None, wait: float, as_json: bool) -> None:
    """Sync a user's memories with markdown files under <sync dir>/<user>/.

    Edited files become new versions, new files become memories, deleted files are
    forgotten; a file changed on both sides gets a <name>.conflict.md copy instead of
    being overwritten. Beat runs this periodically for every synced user.

    \b
    Examples:
      muma sync --user alice
      muma sync --user alice --dir ~/notes/muma --wait 30
    """
    require_schema()
    tenant_id = tenant_of(tenant)
    report = last = run_user_sync(tenant_id=tenant_id, user_id=user_id, root=root)
    deadline = time.monotonic() + wait
    while (last.pending or last.captured) and time.monotonic() < deadline:
        time.sleep(WAIT_POLL_SECONDS)
        last = run_user_sync(tenant_id=tenant_id, user_id=user_id, root=root)
        report = _merge(report, last)
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2))
    else:
        _print(report)
    if report.errors:
        raise SystemExit(1)


def _merge(first: SyncReport, later: SyncReport) -> SyncReport:
    """What happened over several runs; `pending` is as of the last one."""
    merged = SyncReport(first.tenant_id, first.user_id, first.directory)
    for key in LABELS:
        if key == "pending":
            merged.pending = list(later.pending)
        elif key in ("conflicts", "errors"):
            merged.__dict__[key] = list(later.__dict__[key])
        else:
            merged.__dict__[key] = [*first.__dict__[key], *later.__dict__[key]]
    return merged


def _print(report: SyncReport) -> None:
    counts = report.counts()
    console.print(f"synced {report.user_id} with {report.directory}")
    for key, label in LABELS.items():
        if counts[key]:
            console.print(f"  {label}: {counts[key]}")
            for item in getattr(report, key):
                style = "red" if key in ("conflicts", "errors") else "dim"
                console.print(f"    [{style}]{item}[/]")
    if not any(counts.values()):
        console.print("  nothing to do")
