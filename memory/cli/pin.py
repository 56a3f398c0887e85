"""`muma pin ID --user U [--unpin]`: pinned memories never decay or get archived."""

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
from memory.clients.embedder import get_embedder
from memory.config import get_settings
from memory.db import session_scope
from memory.notes.admin import NotePatch, patch_note


@click.command(short_help="Pin or unpin a memory.")
@click.argument("note_id")
@user_option
@tenant_option
@click.option("--unpin", is_flag=True, help="Remove the pin instead.")
@domain_errors
def pin(note_id: str, user_id: str, tenant: str | None, unpin: bool) -> None:
    """Pin a memory (or --unpin it); the change is audited.

    \b
    Examples:
      muma pin 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice
      muma pin 3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f --user alice --unpin
    """
    require_schema()
    settings = get_settings()
    with session_scope() as session:
        viewer = viewer_for(session=session, tenant_id=tenant_of(tenant), user_id=user_id)
        note, changes = patch_note(
            session=session,
            viewer=viewer,
            note_id=parse_id(note_id),
            patch=NotePatch(pinned=not unpin),
            actor=CLI_ACTOR,
            settings=settings,
            embedder=get_embedder(settings),
        )
        state = "pinned" if note.pinned else "unpinned"
        line = f"{state} {note.id}" + ("" if changes else " (unchanged)")
    console.print(line)
