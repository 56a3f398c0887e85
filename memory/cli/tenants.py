"""`muma tenants erase`: erase a whole tenant (every user's data, its agents and tokens)."""

from __future__ import annotations

import click

from memory.cli.common import require_schema
from memory.cli.options import domain_errors, json_option
from memory.cli.users import background_option, batch_option, erase_target, reason_option
from memory.errors import InvalidInputError


@click.group()
def tenants() -> None:
    """Tenants: erase one whole.

    \b
    Example:
      muma tenants erase --tenant acme --confirm acme
    """


@tenants.command(short_help="Erase a whole tenant: every user, agent and token of it.")
@click.option("--tenant", "tenant_id", required=True, help="The tenant to erase (required).")
@click.option(
    "--confirm",
    default=None,
    help="The tenant's id again (asked for when left out): nothing is erased otherwise.",
)
@reason_option
@background_option
@batch_option
@json_option
@domain_errors
def erase(
    tenant_id: str,
    confirm: str | None,
    reason: str | None,
    background: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Erase a tenant: every user's memories, episodes, statistics, events, dead letters,
    working memory and synced files, its agents, its tokens (revoked at once) and its
    earlier erasure records. Only this erasure's record remains.

    \b
    Examples:
      muma tenants erase --tenant acme --confirm acme --reason "contract ended"
      muma tenants erase --tenant acme --confirm acme --background
    """
    require_schema()
    if confirm is None:
        confirm = click.prompt(f"Type '{tenant_id}' to erase the whole tenant", default="")
    if confirm != tenant_id:
        raise InvalidInputError("--confirm: must be the tenant's id; nothing was erased")
    erase_target(tenant_id, None, reason, background, batch_size, as_json)
