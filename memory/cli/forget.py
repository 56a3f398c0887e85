"""`muma forget ID --user U`: forget one memory (soft, audited, history kept)."""

from __future__ import annotations

import click

from memory.cli.common import console, require_schema
from memory.cli.options import (
    CLI_ACTOR,
    domain_errors,
    parse_id,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.db import session_scope
from memory.notes.service import forget_note


@click.command(short_help="Forget a memory (soft, audited).")
@click.argument("note_id")
@user_option
@tenant_option
@click.option("--reason", default=None, help="Why (kept in the audit log).")
@domain_errors
def forget(note_id: str, user_id: str, tenant: str | None, reason: str | None) -> None:
    """Forget a memory: it is no longer recalled; its versions stay in the history.

    \b
    Example:
      muma forget 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice --reason "wrong"
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        note = forget_note(
            session=session,
            viewer=viewer,
            note_id=parse_id(note_id),
            actor=CLI_ACTOR,
            reason=reason,
        )
        summary = f"forgot {note.id}: {note.content[:80]}"
    console.print(summary)
