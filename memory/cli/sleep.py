"""`muma decay`, `muma consolidate`, `muma conflicts`: preview and run memory dynamics.

The commands call the same domain functions as the beat tasks, with an explicit clock
(`--now`), so an operator can see what a sweep would do at any moment.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click
from rich.table import Table

from memory.cli.common import console, require_schema
from memory.cli.options import (
    CLI_ACTOR,
    domain_errors,
    json_option,
    parse_id,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.clients.embedder import get_embedder
from memory.clients.llm import get_llm_client
from memory.config import get_settings
from memory.conflicts.resolve import list_conflicts, resolve_conflict
from memory.conflicts.service import detect_conflicts
from memory.consolidation.cycle import run_decay, try_user_lock
from memory.consolidation.service import consolidate_user
from memory.db import session_scope
from memory.errors import ConflictError, InvalidInputError
from memory.types import utcnow

PREVIEW_CHARS = 70
now_option = click.option(
    "--now", "now_text", default=None, help="Evaluate at this ISO time (default: now, UTC)."
)
dry_run_option = click.option("--dry-run", is_flag=True, help="Show what would change only.")


def parse_now(value: str | None) -> datetime:
    if value is None:
        return utcnow()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInputError(f"--now: {value!r} is not an ISO date-time") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _emit(as_json: bool, payload: dict[str, Any], table: Table | None, line: str) -> None:
    if as_json:
        click.echo(json.dumps(payload, default=str, indent=2))
        return
    if table is not None and table.row_count:
        console.print(table)
    console.print(line)


@click.command(short_help="Archive, prune and expire a user's notes (or preview it).")
@user_option
@tenant_option
@dry_run_option
@now_option
@json_option
@domain_errors
def decay(
    user_id: str, tenant: str | None, dry_run: bool, now_text: str | None, as_json: bool
) -> None:
    """Run the decay sweep for one user: expire TTL notes, archive weak ones, hard-delete
    long-archived ones (a tombstone remains). --dry-run changes nothing.

    \b
    Examples:
      muma decay --user alice --dry-run
      muma decay --user alice --dry-run --now 2025-07-01T03:00:00Z
    """
    require_schema()
    now, tenant_id = parse_now(now_text), tenant_of(tenant)
    with session_scope() as session:
        viewer_for(session=session, tenant_id=tenant_id, user_id=user_id)
        report = run_decay(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            now=now,
            settings=get_settings(),
            dry_run=dry_run,
        )
    if report is None:
        raise ConflictError("another maintenance run holds this user; try again shortly")
    verb = "would" if dry_run else "did"
    table = Table("action", "note", "kind", "activation", "reason", "content")
    for a in report.actions:
        shown = "-inf" if a.activation == float("-inf") else f"{a.activation:.2f}"
        table.add_row(a.action, str(a.note_id)[:8], a.kind, shown, a.reason, _preview(a.content))
    counts = report.counts()
    line = (
        f"{verb} expire {counts['expired']}, archive {counts['archived']}, "
        f"delete {counts['deleted']} (+{counts['history_deleted']} earlier versions) "
        f"of {counts['scanned']} notes scanned at {now.isoformat()}"
    )
    payload = {
        "now": now,
        "dry_run": dry_run,
        "counts": counts,
        "actions": [a.__dict__ for a in report.actions],
    }
    _emit(as_json, payload, table, line)


@click.command(short_help="Consolidate a user's episodic notes into knowledge notes.")
@user_option
@tenant_option
@dry_run_option
@now_option
@json_option
@domain_errors
def consolidate(
    user_id: str, tenant: str | None, dry_run: bool, now_text: str | None, as_json: bool
) -> None:
    """Cluster the user's episodic notes (HDBSCAN) and create or update one knowledge note
    per cluster; a second run changes nothing. --dry-run writes nothing.

    \b
    Examples:
      muma consolidate --user alice --dry-run
      muma consolidate --user alice --now 2025-07-01T03:00:00Z
    """
    require_schema()
    now, tenant_id, settings = parse_now(now_text), tenant_of(tenant), get_settings()
    with session_scope() as session:
        viewer_for(session=session, tenant_id=tenant_id, user_id=user_id)
        if not dry_run and not try_user_lock(session, tenant_id, user_id):
            raise ConflictError("another maintenance run holds this user; try again shortly")
        report = consolidate_user(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            now=now,
            settings=settings,
            llm=None if dry_run else get_llm_client(settings),
            dry_run=dry_run,
        )
    table = Table("change", "note", "sources", "content")
    for c in report.changes:
        note = str(c.note_id)[:8] if c.note_id else "-"
        label = f"would be {c.action}" if dry_run and c.action != "unchanged" else c.action
        table.add_row(label, note, str(c.sources), _preview(c.content))
    counts = report.counts()
    line = (
        f"{'would create' if dry_run else 'created'} {counts['created']}, "
        f"{'update' if dry_run else 'updated'} {counts['updated']}, unchanged "
        f"{counts['unchanged']}: {counts['clusters']} clusters of {counts['considered']} "
        f"episodic notes ({counts['noise']} unclustered)"
    )
    payload = {
        "now": now,
        "dry_run": dry_run,
        "counts": counts,
        "changes": [c.__dict__ for c in report.changes],
    }
    _emit(as_json, payload, table, line)


@click.group()
def conflicts() -> None:
    """Contradictions between memories: detect, list and resolve them.

    \b
    Examples:
      muma conflicts detect --user alice
      muma conflicts list --user alice
      muma conflicts resolve 5b0e... --user alice --keep a
      muma conflicts resolve 5b0e... --user alice --keep b --merged "Alice lives in Lyon."
    """


@conflicts.command("detect")
@user_option
@tenant_option
@now_option
@json_option
@domain_errors
def detect_command(user_id: str, tenant: str | None, now_text: str | None, as_json: bool) -> None:
    """Find and classify new conflicting pairs among the user's notes.

    \b
    Example:
      muma conflicts detect --user alice --json
    """
    require_schema()
    now, tenant_id, settings = parse_now(now_text), tenant_of(tenant), get_settings()
    with session_scope() as session:
        viewer_for(session=session, tenant_id=tenant_id, user_id=user_id)
        if not try_user_lock(session, tenant_id, user_id):
            raise ConflictError("another maintenance run holds this user; try again shortly")
        report = detect_conflicts(
            session=session,
            tenant_id=tenant_id,
            user_id=user_id,
            now=now,
            settings=settings,
            llm=get_llm_client(settings),
        )
    table = Table("class", "similarity", "reason", "a", "b")
    for candidate, verdict in report.found:
        if verdict.classification != "compatible":
            table.add_row(
                verdict.classification,
                f"{candidate.similarity:.2f}",
                verdict.reason,
                _preview(candidate.a.content),
                _preview(candidate.b.content),
            )
    counts = report.counts()
    line = (
        f"{counts['candidates']} new pairs in the band among {counts['scanned']} notes: "
        f"{counts['contradictory']} contradictory, {counts['subsumes']} subsumes, "
        f"{counts['ambiguous']} ambiguous, {counts['compatible']} compatible"
    )
    _emit(as_json, {"now": now, "counts": counts}, table, line)


@conflicts.command("list")
@user_option
@tenant_option
@click.option("--status", type=click.Choice(["open", "resolved", "all"]), default="open")
@json_option
@domain_errors
def list_command(user_id: str, tenant: str | None, status: str, as_json: bool) -> None:
    """The user's conflicts, cross-agent ones first.

    \b
    Example:
      muma conflicts list --user alice --status all
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        rows = list_conflicts(
            session=session, viewer=viewer, status=None if status == "all" else status
        )
        items = [
            {
                "id": str(c.id),
                "classification": c.classification,
                "status": c.status,
                "similarity": c.similarity,
                "reason": ((c.resolution or {}).get("detection") or {}).get("reason"),
                "a": a.content,
                "b": b.content,
                "agents": [c.agent_a_id, c.agent_b_id],
            }
            for c, a, b in rows
        ]
    table = Table("id", "class", "status", "sim", "reason", "a", "b")
    for item in items:
        table.add_row(
            item["id"],
            item["classification"],
            item["status"],
            f"{item['similarity']:.2f}",
            item["reason"] or "",
            _preview(item["a"]),
            _preview(item["b"]),
        )
    _emit(as_json, {"conflicts": items}, table, f"{len(items)} {status} conflicts")


@conflicts.command("resolve")
@click.argument("conflict_id")
@user_option
@tenant_option
@click.option("--keep", type=click.Choice(["a", "b", "both"]), required=True)
@click.option("--merged", "merged_content", default=None, help="Merged text (a new version).")
@domain_errors
def resolve_command(
    conflict_id: str, user_id: str, tenant: str | None, keep: str, merged_content: str | None
) -> None:
    """Resolve a conflict: the losing note is closed (kept in the history), never deleted.

    \b
    Examples:
      muma conflicts resolve CONFLICT_ID --user alice --keep b
      muma conflicts resolve CONFLICT_ID --user alice --keep both --merged "Alice lives in Porto"
    """
    require_schema()
    settings = get_settings()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        conflict = resolve_conflict(
            session=session,
            viewer=viewer,
            conflict_id=parse_id(conflict_id, "conflict"),
            keep=keep,
            actor=CLI_ACTOR,
            now=utcnow(),
            settings=settings,  # type: ignore[arg-type]
            embedder=get_embedder(settings) if merged_content else None,
            merged_content=merged_content,
        )
        line = f"resolved {conflict.id}: kept {keep}"
        if conflict.resolution and conflict.resolution.get("merged_note_id"):
            line += f", merged into {conflict.resolution['merged_note_id']}"
    console.print(line)
