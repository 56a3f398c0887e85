"""`muma stats --user U`: what a user's memory holds, and how the pipeline is doing."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.columns import Columns
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
from memory.ops.stats import user_stats

BAR_WIDTH = 30
BREAKDOWNS = ("status", "kind", "domain", "visibility", "agent")


@click.command(short_help="Counts, activation histogram and pipeline health.")
@user_option
@tenant_option
@agent_option
@json_option
@domain_errors
def stats(user_id: str, tenant: str | None, agent_id: str | None, as_json: bool) -> None:
    """Counts by status, kind, domain, visibility and agent; activation histogram;
    pipeline and dead-letter counts.

    \b
    Examples:
      muma stats --user alice
      muma stats --user alice --agent coach --json
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        data = user_stats(session=session, viewer=viewer, settings=get_settings())
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    _print(data)


def _counts_table(title: str, counts: dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None)
    for key, value in counts.items():
        table.add_row(key, str(value))
    if not counts:
        table.add_row("(none)", "0")
    return table


def _bucket_label(bucket: dict[str, Any]) -> str:
    low, high = bucket["low"], bucket["high"]
    if low is None:
        return f"B < {high:g}"
    if high is None:
        return f"B ≥ {low:g}"
    return f"{low:g} ≤ B < {high:g}"


def _print(data: dict[str, Any]) -> None:
    notes = data["notes"]
    who = f" as agent {data['agent_id']}" if data["agent_id"] else ""
    console.print(
        f"[bold]{data['user_id']}[/] (tenant {data['tenant_id']}){who}: "
        f"{notes['current']} current memories, {notes['pinned']} pinned, "
        f"{notes['total']} rows with history; {data['links']} links, "
        f"{data['conflicts']['open']} open conflicts"
    )
    console.print(
        Columns(
            [_counts_table(f"by {name}", notes[f"by_{name}"]) for name in BREAKDOWNS],
            padding=(1, 3),
        )
    )
    activation = data["activation"]
    histogram = Table(title="base-level activation B (current memories)", title_justify="left")
    histogram.add_column("range")
    histogram.add_column("count", justify="right")
    histogram.add_column("")
    peak = max((b["count"] for b in activation["histogram"]), default=0) or 1
    for bucket in activation["histogram"]:
        bar = "█" * round(BAR_WIDTH * bucket["count"] / peak)
        histogram.add_row(_bucket_label(bucket), str(bucket["count"]), bar)
    console.print(histogram)
    console.print(
        f"mean B {activation['mean']}; notes below the retrieval threshold: "
        f"{activation['below_retrieval_threshold']}, below the prune threshold: "
        f"{activation['below_prune_threshold']}"
    )
    pipeline = data["pipeline"]
    console.print(_counts_table("episodes", pipeline["episodes"]))
    console.print(
        f"dead letters: {pipeline['dead_letters']} for this user, "
        f"{pipeline['dead_letters_tenant']} in the tenant"
    )
