"""`muma journal --user U [--session S]`: what each captured turn became and what each
context answer injected, with the reasons (the API's GET /v1/journal, from the database).

Like the API it prints no text of a turn or a memory, only ids, times, outcomes, scores
and reasons; `--agent` shows what that agent may see.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from memory.cli.common import console, require_schema
from memory.cli.options import (
    agent_option,
    domain_errors,
    json_option,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.config import get_settings
from memory.db import session_scope
from memory.journal.service import DEFAULT_LIMIT, MAX_LIMIT, read_journal


@click.command(short_help="Why turns were (not) remembered; what was injected.")
@user_option
@click.option("--session", "session_id", default=None, help="One session only (default: all).")
@agent_option
@tenant_option
@click.option(
    "--limit",
    default=DEFAULT_LIMIT,
    show_default=True,
    type=click.IntRange(1, MAX_LIMIT),
    help="Newest turns and injections to show (each).",
)
@json_option
@domain_errors
def journal(
    user_id: str,
    session_id: str | None,
    agent_id: str | None,
    tenant: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The turn journal: per captured turn, what happened to it (stored, merged into a
    near-duplicate, revised a memory, waits as a candidate, skipped as chatter, dropped,
    failed) and why; per context answer, the memories injected with scores and why.

    \b
    Examples:
      muma journal --user alice
      muma journal --user alice --session s1 --limit 20
      muma journal --user alice --agent coach --json
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        data = read_journal(
            session=session,
            viewer=viewer,
            settings=get_settings(),
            session_id=session_id,
            limit=limit,
        )
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    _print_turns(data["turns"])
    _print_injections(data["injections"])


def _time(iso: str | None) -> str:
    return iso[:19].replace("T", " ") if iso else "-"


def _print_turns(turns: list[dict[str, Any]]) -> None:
    if not turns:
        console.print("no captured turns")
        return
    table = Table("seq", "turn", "outcome", title="Turns", title_justify="left")
    table.add_column("why", ratio=1, min_width=30)
    for turn in turns:
        origin = turn["origin"] + (f" {turn['origin_ref']}" if turn["origin_ref"] else "")
        status = turn["status"] + (f" {turn['decision']}" if turn["decision"] else "")
        lines = [
            _time(turn["captured_at"]),
            f"session {turn['session_id']}",
            f"{turn['role']} · {origin}",
            status,
        ]
        if turn["error"]:
            lines.append(turn["error"])
        table.add_row(str(turn["seq"]), "\n".join(lines), turn["outcome"], _why(turn))
    console.print(table)


def _why(turn: dict[str, Any]) -> str:
    if not turn["notes"]:
        return str(turn["why"])
    return "\n".join(f"[dim]{n['note_id'][:8]}[/] {n['why']}" for n in turn["notes"])


def _print_injections(injections: list[dict[str, Any]]) -> None:
    if not injections:
        console.print("no injections recorded")
        return
    table = Table("answer", "#", "memory", title="Injections", title_justify="left")
    table.add_column("why", ratio=1, min_width=30)
    for entry in injections:
        head = "\n".join(
            [
                _time(entry["at"]),
                f"agent {entry['agent_id']}" if entry["agent_id"] else "user level",
                f"session {entry['session_id']}" if entry["session_id"] else "no session",
            ]
        )
        if not entry["memories"]:
            table.add_row(head, "-", "(hidden)", "no memory you may see")
        for memory in entry["memories"]:
            table.add_row(head, str(memory["rank"]), memory["note_id"][:8], memory["why"])
            head = ""
    console.print(table)
