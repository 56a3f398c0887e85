"""`muma candidates list|approve|reject`: review the memories that wait as candidates
(notes with `review = 'candidate'`, README "Memory candidates") before they may be
injected; the CLI side of GET /v1/candidates and POST /v1/candidates/{id}/approve|reject.

Invariants (from memory.trust.review): only a current, active candidate the viewer may
see can be approved or rejected; anything else is a one-line error and a non-zero exit.
Approving keeps the note's origin and trust; approving with `--content` writes a new
version first and approves that. Rejecting forgets the candidate: its content is erased
everywhere it reached (in the database in one transaction, then outside it), a tombstone
says who rejected it.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memory.cli.common import console, require_schema
from memory.cli.options import (
    CLI_ACTOR,
    agent_option,
    domain_errors,
    json_option,
    parse_id,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.clients.embedder import get_embedder
from memory.clients.redis import get_redis
from memory.config import Settings, get_settings
from memory.db import session_scope
from memory.erasure.outside import purge_outside
from memory.errors import InvalidInputError
from memory.notes.models import Note
from memory.trust.review import (
    MAX_LISTED,
    approve_candidate,
    list_candidates,
    locate_candidate,
    reject_located,
)

SHOWN_CHARS = 160  # the table's content column; --json gives the whole text


@click.group(short_help="Review memories waiting for approval.")
def candidates() -> None:
    """Memory candidates: memories from low-trust origins (tools, web pages, files,
    other participants; see the `candidates` settings) that wait for review before they
    may be injected into prompts. Approve them (as they are or corrected) or reject them
    (they are forgotten, erased everywhere their content went).

    \b
    Examples:
      muma candidates list --user alice
      muma candidates approve 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice
      muma candidates reject 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice --reason spam
    """


@candidates.command(name="list", short_help="List the candidates waiting for review.")
@user_option
@agent_option
@tenant_option
@click.option(
    "--limit",
    default=100,
    show_default=True,
    type=click.IntRange(1, MAX_LISTED),
    help="Newest candidates to show.",
)
@json_option
@domain_errors
def list_command(
    user_id: str, agent_id: str | None, tenant: str | None, limit: int, as_json: bool
) -> None:
    """List the candidates waiting for review, newest first: where each came from, its
    trust and kind, and whether its text reads like an instruction to the assistant.

    \b
    Examples:
      muma candidates list --user alice
      muma candidates list --user alice --agent coach --json
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        rows = [_row(note) for note in list_candidates(session=session, viewer=viewer, limit=limit)]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        console.print(f"no candidates waiting for review for user {user_id}")
    else:
        _print_table(rows)


@candidates.command(short_help="Approve a candidate, as it is or corrected.")
@click.argument("note_id")
@user_option
@agent_option
@tenant_option
@click.option("--content", default=None, help="Approve this corrected text (a new version).")
@domain_errors
def approve(
    note_id: str, user_id: str, agent_id: str | None, tenant: str | None, content: str | None
) -> None:
    """Approve a candidate: from now on it may be injected, still labelled with its
    origin. With --content, the corrected text is stored as a new version, which is the
    one approved (its id is printed).

    \b
    Examples:
      muma candidates approve 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice
      muma candidates approve 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice \\
        --content "The build server listens on port 8443."
    """
    require_schema()
    settings = get_settings()
    if content is not None:
        _check_content(content, settings)
    candidate_id = parse_id(note_id)
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        note = approve_candidate(
            session=session,
            viewer=viewer,
            note_id=candidate_id,
            actor=CLI_ACTOR,
            settings=settings,
            embedder=get_embedder(settings),
            content=content,
        )
        approved_id = note.id
    # Plain echo: one unwrapped line whose second word is the approved id, for scripts.
    if approved_id == candidate_id:
        click.echo(f"approved {approved_id}")
    else:
        click.echo(f"approved {approved_id} (edited: a new version of {candidate_id})")


@candidates.command(short_help="Reject a candidate: forget it, erase its content.")
@click.argument("note_id")
@user_option
@agent_option
@tenant_option
@click.option("--reason", default=None, help="Why (kept in the audit log and the tombstone).")
@domain_errors
def reject(
    note_id: str, user_id: str, agent_id: str | None, tenant: str | None, reason: str | None
) -> None:
    """Reject a candidate: it is forgotten, its content erased everywhere it went (the
    turns it came from, working memory, synced files); a tombstone keeps its ids, who
    rejected it, when and why.

    \b
    Example:
      muma candidates reject 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice --reason "ad"
    """
    require_schema()
    candidate_id = parse_id(note_id)
    # One transaction: the candidate check holds its row lock until the erasure commits.
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        ref = locate_candidate(session=session, viewer=viewer, note_id=candidate_id)
        report = reject_located(session=session, ref=ref, actor=CLI_ACTOR, reason=reason)
    outside = purge_outside(report, client=get_redis(), settings=get_settings())
    counts = {**report.summary(), **outside}
    click.echo(
        f"rejected {candidate_id}, erased: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())
    )


def _check_content(content: str, settings: Settings) -> None:
    """The API's limits on a memory's text (empty text is refused by the domain)."""
    limit = settings.api.max_content_bytes
    if len(content.encode("utf-8")) > limit:
        raise InvalidInputError(f"--content is longer than maxContentBytes ({limit} bytes)")
    if "\x00" in content:
        raise InvalidInputError("--content must not contain NUL characters")


def _row(note: Note) -> dict[str, Any]:
    """One candidate as --json prints it (the fields GET /v1/candidates gives for review)."""
    return {
        "id": str(note.id),
        "lineage_id": str(note.lineage_id),
        "version": note.version,
        "agent_id": note.agent_id,
        "session_id": note.session_id,
        "created_at": note.created_at.isoformat(),
        "origin": note.origin,
        "origin_ref": note.origin_ref,
        "trust": note.trust,
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "instruction_like": note.instruction_like,
        "content": note.content,
    }


def _shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _print_table(rows: list[dict[str, Any]]) -> None:
    """Three columns, to fit 80: id and when; origin, trust, kind, flag; the text."""
    table = Table(title=f"{len(rows)} waiting for review", title_justify="left", show_lines=True)
    table.add_column("candidate", no_wrap=True, min_width=36)
    table.add_column("from", overflow="fold", min_width=12, max_width=30)
    table.add_column("content", ratio=1, min_width=16)
    for row in rows:
        head = f"{row['id']}\n[dim]{row['created_at'][:16].replace('T', ' ')}[/]"
        # Text, not markup: a candidate's words and origin are untrusted and may hold "[".
        origin = Text(row["origin"] + (f" {row['origin_ref']}" if row["origin_ref"] else ""))
        origin.append(f"\n{row['trust']} trust · {row['kind']}")
        if row["instruction_like"]:
            origin.append("\ninstruction-like", style="bold red")
        table.add_row(head, origin, Text(_shorten(row["content"])))
    console.print(table)
