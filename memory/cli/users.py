"""`muma users erase|erasures`: erase a user (every row, key and synced file), follow erasures.

The erasure runs in this process with a progress bar (each step committed on its own, so
Ctrl-C and the same command again resume it), or with `--background` on the workers.
The exit status is non-zero unless the erasure finished and verified that nothing is left.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import click
from rich.table import Table

from memory.cli.common import console, require_schema
from memory.cli.options import (
    CLI_ACTOR,
    domain_errors,
    json_option,
    parse_id,
    progress_bar,
    tenant_of,
    tenant_option,
    user_option,
)
from memory.db import session_scope
from memory.erasure.catalog import PLACES
from memory.erasure.models import Erasure
from memory.erasure.runner import run_erasure
from memory.erasure.steps import Step
from memory.erasure.users import DEFAULT_BATCH, get_erasure, list_erasures, start_erasure
from memory.errors import MemoryServiceError, TransientError

batch_option = click.option(
    "--batch-size",
    default=DEFAULT_BATCH,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Rows deleted per table and step (one transaction each).",
)
background_option = click.option(
    "--background",
    is_flag=True,
    help="Leave it to the workers; follow it with `muma users erasures`.",
)
reason_option = click.option("--reason", default=None, help="Why (kept with the erasure's record).")


@click.group()
def users() -> None:
    """Users of a tenant: erase one, follow erasures.

    \b
    Examples:
      muma users erase --user alice --reason "asked to be forgotten"
      muma users erase --user alice --background
      muma users erasures
    """


@users.command(short_help="Erase every row, key and synced file of a user.")
@user_option
@tenant_option
@reason_option
@background_option
@batch_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@domain_errors
def erase(
    user_id: str,
    tenant: str | None,
    reason: str | None,
    background: bool,
    batch_size: int,
    yes: bool,
    as_json: bool,
) -> None:
    """Erase a user: memories, episodes, links, statistics, events, dead letters, tokens,
    working memory and synced files. Tokens bound to the user stop working at once and
    captures for the user are refused until it is done; afterwards the id starts a new,
    empty user. The erasure's record (who, when, why, counts) remains.

    \b
    Examples:
      muma users erase --user alice --reason "asked to be forgotten"
      muma users erase --user alice --tenant acme --background --yes
    """
    require_schema()
    tenant_id = tenant_of(tenant)
    if not yes:
        click.confirm(
            f"Erase everything of user '{user_id}' in tenant '{tenant_id}'? It cannot be undone",
            abort=True,
        )
    erase_target(tenant_id, user_id, reason, background, batch_size, as_json)


def erase_target(
    tenant_id: str,
    user_id: str | None,
    reason: str | None,
    background: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Start (or resume) the erasure of the user (None: the tenant), then run or enqueue it."""
    with session_scope() as session:
        erasure, new = start_erasure(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            requested_by=CLI_ACTOR,
            reason=reason,
        )
        erasure_id = erasure.id
    if not new:
        console.print(f"erasure {erasure_id} was already running: resuming it")
    if background:
        from tasks.erasure import enqueue_erasure

        if not enqueue_erasure(erasure_id, batch_size):
            raise TransientError("the broker is unreachable: run it again without --background")
        console.print(f"erasure {erasure_id} started; follow it with `muma users erasures`")
        return
    _run_with_progress(erasure_id, batch_size)
    with session_scope() as session:
        show_erasure(get_erasure(session=session, erasure_id=erasure_id), as_json)


def _run_with_progress(erasure_id: uuid.UUID, batch_size: int) -> None:
    with progress_bar() as bar:
        task = bar.add_task(f"erasure {erasure_id}", total=None)

        def advance(step: Step) -> None:
            total = sum(step.progress.get("total", {}).values())
            done = sum(
                step.progress.get("removed", {}).get(t, 0) for t in step.progress.get("total", {})
            )
            bar.update(task, total=total or None, completed=done, description=step.detail[:70])

        outcome = run_erasure(erasure_id, limit=batch_size, wait_busy=True, on_step=advance)
    if outcome.status != "done":
        raise MemoryServiceError(f"erasure {erasure_id} stopped: {outcome.status}")


def show_erasure(erasure: Erasure, as_json: bool) -> None:
    """The erasure's record; for a finished one, its report table (removed, left)."""
    data = erasure_dict(erasure)
    if as_json:
        click.echo(json.dumps(data, indent=1))
        return
    who = f"user {erasure.user_id}" if erasure.user_id else "the whole tenant"
    console.print(f"erasure {erasure.id}: {who} of tenant {erasure.tenant_id}, {erasure.status}")
    report = erasure.report
    if report is None:
        console.print(f"  {erasure.progress.get('detail', '')}")
        return
    table = Table("removed from", "rows / items", "left")
    removed = report["removed"]
    # Tables in the catalog's order, then Redis and files (JSONB keeps no order).
    names = [p.table for p in PLACES if p.table in removed]
    for name in [*names, *sorted(set(removed) - set(names))]:
        left = report["remaining"].get(name)
        table.add_row(name, str(removed[name]), "" if left is None else str(left))
    console.print(table)
    console.print(
        f"tokens revoked: {report['tokens_revoked']}, passes: {report['passes']}, "
        f"{report['seconds']:.1f} s"
    )
    if any(report["remaining"].values()):
        raise MemoryServiceError(f"erasure {erasure.id} left rows behind: {report['remaining']}")


def erasure_dict(erasure: Erasure) -> dict[str, Any]:
    return {
        "erasure_id": str(erasure.id),
        "tenant_id": erasure.tenant_id,
        "user_id": erasure.user_id,
        "status": erasure.status,
        "requested_by": erasure.requested_by,
        "reason": erasure.reason,
        "started_at": erasure.started_at.isoformat(),
        "finished_at": erasure.finished_at.isoformat() if erasure.finished_at else None,
        "progress": erasure.progress,
        "report": erasure.report,
    }


@users.command(short_help="List erasures, or show one with its report.")
@click.option("--tenant", default=None, help="Only this tenant (default: every tenant).")
@click.option("--id", "erasure_ref", default=None, help="Show this erasure and its report.")
@json_option
@domain_errors
def erasures(tenant: str | None, erasure_ref: str | None, as_json: bool) -> None:
    """The most recent erasures first (every tenant's unless --tenant), or one of them.

    \b
    Examples:
      muma users erasures --tenant acme
      muma users erasures --id 0b6f3c1e-…
    """
    require_schema()
    with session_scope() as session:
        if erasure_ref is not None:
            erasure = get_erasure(session=session, erasure_id=parse_id(erasure_ref, "erasure"))
            show_erasure(erasure, as_json)
            return
        rows = list_erasures(session=session, tenant_id=tenant)
        if as_json:
            click.echo(json.dumps([erasure_dict(e) for e in rows], indent=1))
            return
        table = Table("id", "tenant", "user", "status", "started", "finished", "where")
        for e in rows:
            table.add_row(
                str(e.id),
                e.tenant_id,
                e.user_id or "(whole tenant)",
                e.status,
                e.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                e.finished_at.strftime("%Y-%m-%d %H:%M:%S") if e.finished_at else "",
                "" if e.report else str(e.progress.get("detail", ""))[:60],
            )
        console.print(table)
