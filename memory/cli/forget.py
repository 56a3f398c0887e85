"""`muma forget ID --user U`: forget one memory, everywhere its content went; `muma archive`
and `muma restore`: hide one and bring it back (nothing is erased)."""

from __future__ import annotations

from typing import Any

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
from memory.clients.redis import get_redis
from memory.config import get_settings
from memory.db import session_scope
from memory.erasure.forget import forget_memory
from memory.erasure.outside import purge_outside
from memory.notes.lifecycle import archive_note, restore_note


@click.command(short_help="Forget a memory: erase it everywhere it went.")
@click.argument("note_id")
@user_option
@tenant_option
@click.option("--reason", default=None, help="Why (kept in the audit log and the tombstone).")
@domain_errors
def forget(note_id: str, user_id: str, tenant: str | None, reason: str | None) -> None:
    """Forget a memory: every version of it, the turns it came from, what it gave other
    notes, knowledge built from it, its working-memory items and synced file are erased.
    A tombstone keeps its ids, who forgot it, when and why. To hide a memory and keep it,
    use `muma archive` instead.

    \b
    Example:
      muma forget 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice --reason "wrong"
    """
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        report = forget_memory(
            session=session,
            viewer=viewer,
            note_id=parse_id(note_id),
            actor=CLI_ACTOR,
            reason=reason,
        )
    outside = purge_outside(report, client=get_redis(), settings=get_settings())
    counts = {**report.summary(), **outside}
    console.print(
        f"forgot {note_id}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())
    )


@click.command(short_help="Archive a memory: hidden from recall, kept, restorable.")
@click.argument("note_id")
@user_option
@tenant_option
@click.option("--reason", default=None, help="Why (kept in the audit log).")
@domain_errors
def archive(note_id: str, user_id: str, tenant: str | None, reason: str | None) -> None:
    """Archive a memory: no longer recalled, kept as it is; `muma restore` brings it back.

    \b
    Example:
      muma archive 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice
    """
    _change_state(archive_note, "archived", note_id, user_id, tenant, reason)


@click.command(short_help="Restore an archived memory.")
@click.argument("note_id")
@user_option
@tenant_option
@click.option("--reason", default=None, help="Why (kept in the audit log).")
@domain_errors
def restore(note_id: str, user_id: str, tenant: str | None, reason: str | None) -> None:
    """Make an archived memory recallable again.

    \b
    Example:
      muma restore 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice
    """
    _change_state(restore_note, "restored", note_id, user_id, tenant, reason)


def _change_state(
    change: Any, done: str, note_id: str, user_id: str, tenant: str | None, reason: str | None
) -> None:
    require_schema()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        note, changed = change(
            session=session,
            viewer=viewer,
            note_id=parse_id(note_id),
            actor=CLI_ACTOR,
            reason=reason,
        )
        note_id = str(note.id)
    console.print(f"{done} {note_id}" if changed else f"{note_id} was already {done}")
