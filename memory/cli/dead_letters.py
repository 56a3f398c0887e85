"""`muma dead-letters list|retry ID`: work that failed its last attempt."""

from __future__ import annotations

import json

import click
from rich.table import Table

from memory.cli.common import console, require_schema
from memory.cli.options import domain_errors, json_option, parse_id
from memory.db import session_scope
from memory.errors import TransientError
from memory.ops.dead_letters import list_dead_letters, mark_for_retry


@click.group(name="dead-letters", short_help="List and retry failed tasks.")
def dead_letters() -> None:
    """Failed tasks kept with their arguments and error, and their retry.

    \b
    Examples:
      muma dead-letters list
      muma dead-letters retry 9b1f0c2e-5d4a-4e8b-8f3c-1a2b3c4d5e6f
    """


@dead_letters.command(name="list")
@click.option("--tenant", default=None, help="Only this tenant (default: every tenant).")
@click.option("--all", "include_requeued", is_flag=True, help="Include retried ones.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10000))
@json_option
@domain_errors
def list_command(tenant: str | None, include_requeued: bool, limit: int, as_json: bool) -> None:
    """List dead letters, newest first.

    \b
    Example:
      muma dead-letters list --tenant default --all
    """
    require_schema()
    with session_scope() as session:
        letters = list_dead_letters(
            session=session, tenant_id=tenant, include_requeued=include_requeued, limit=limit
        )
        rows = [
            {
                "id": str(d.id),
                "task_name": d.task_name,
                "tenant_id": d.tenant_id,
                "episode_id": str(d.episode_id) if d.episode_id else None,
                "attempts": d.attempts,
                "error": d.error,
                "last_failed_at": d.last_failed_at.isoformat(),
                "requeued_at": d.requeued_at.isoformat() if d.requeued_at else None,
            }
            for d in letters
        ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        console.print("no dead letters")
        return
    table = Table("id", "task", "tenant", "attempts", "last failure", "error")
    for row in rows:
        table.add_row(
            row["id"],
            row["task_name"],
            row["tenant_id"] or "",
            str(row["attempts"]),
            row["last_failed_at"][:19],
            row["error"].splitlines()[0][:80],
        )
    console.print(table)


@dead_letters.command()
@click.argument("dead_letter_id")
@domain_errors
def retry(dead_letter_id: str) -> None:
    """Requeue a dead letter's task with its original arguments.

    \b
    Example:
      muma dead-letters retry 9b1f0c2e-5d4a-4e8b-8f3c-1a2b3c4d5e6f
    """
    require_schema()
    letter_id = parse_id(dead_letter_id, "dead letter")
    with session_scope() as session:
        letter = mark_for_retry(session=session, dead_letter_id=letter_id, tenant_id=None)
        task_name, args, kwargs = letter.task_name, letter.args, letter.kwargs
    from tasks.app import app

    try:
        app.send_task(task_name, args=args, kwargs=kwargs)
    except Exception as exc:  # kombu raises several unrelated types for a dead broker
        raise TransientError(
            f"marked {letter_id} for retry but could not enqueue it ({exc}); queued episodes "
            "are re-sent by the periodic sweep"
        ) from exc
    console.print(f"requeued {task_name} ({letter_id})")
