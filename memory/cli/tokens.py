"""`muma tokens create|list|revoke`.

The CLI runs as the machine's operator: bound to no user, in every tenant, so it creates,
lists and revokes any token (`memory.access.tokens`, `by=None`); a token it creates with
`--user` acts for that user only, and manages only tokens bound to that user.
"""

from __future__ import annotations

import json

import click
from rich.table import Column, Table

from memory.access.models import ApiToken
from memory.access.tokens import create_token, list_tokens, revoke_token
from memory.cli.common import console, require_schema
from memory.config import get_settings
from memory.db import session_scope
from memory.types import TOKEN_ROLES


@click.group()
def tokens() -> None:
    """API tokens (stored as sha256; the secret is shown once).

    \b
    Example:
      muma tokens create --role viewer --name dashboard
    """


@tokens.command()
@click.option("--role", required=True, type=click.Choice(TOKEN_ROLES))
@click.option("--tenant", default=None, help="Tenant (default: the configured tenant_id).")
@click.option("--name", default=None, help="A label to recognise the token by.")
@click.option("--user", "user_id", default=None, help="Bind to one user (user-level access).")
def create(role: str, tenant: str | None, name: str | None, user_id: str | None) -> None:
    """Create a token; its secret is the last line of the output.

    \b
    Example:
      muma tokens create --role agent --name laptop --user alice
    """
    require_schema()
    with session_scope() as session:
        token, secret = create_token(
            session=session,
            role=role,
            tenant_id=tenant or get_settings().tenant_id,
            name=name,
            user_id=user_id,
        )
    bound = f" bound to user {token.user_id}" if token.user_id else ""
    console.print(f"created {role} token {token.id} for tenant {token.tenant_id}{bound}")
    click.echo(secret)


@tokens.command(name="list")
@click.option("--tenant", default=None)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per token, for scripts.")
def list_command(tenant: str | None, as_json: bool) -> None:
    """List tokens (never their secrets). Revoke one by its id or its prefix as shown.

    \b
    Example:
      muma tokens list --tenant default
      muma tokens list --json | jq -r '.id'
    """
    require_schema()
    with session_scope() as session:
        rows = list_tokens(session=session, tenant_id=tenant)
    if as_json:
        for t in rows:
            click.echo(json.dumps(_token_record(t)))
        return
    # The id is never cut: it is what `muma tokens revoke` takes.
    others = ("prefix", "role", "tenant", "user", "name", "created", "revoked")
    table = Table(
        Column("id", no_wrap=True, min_width=36),
        *(Column(name, overflow="fold") for name in others),
    )
    for t in rows:
        table.add_row(
            str(t.id),
            t.prefix + "…",
            t.role,
            t.tenant_id,
            t.user_id or "",
            t.name or "",
            t.created_at.strftime("%Y-%m-%d %H:%M"),
            t.revoked_at.strftime("%Y-%m-%d %H:%M") if t.revoked_at else "",
        )
    console.print(table)


def _token_record(token: ApiToken) -> dict[str, str | None]:
    return {
        "id": str(token.id),
        "prefix": token.prefix,
        "role": token.role,
        "tenant_id": token.tenant_id,
        "user_id": token.user_id,
        "name": token.name,
        "created_at": token.created_at.isoformat(),
        "revoked_at": token.revoked_at.isoformat() if token.revoked_at else None,
    }


@tokens.command()
@click.argument("token_ref")
def revoke(token_ref: str) -> None:
    """Revoke a token by id or displayed prefix.

    \b
    Example:
      muma tokens revoke TOKEN_ID
    """
    require_schema()
    with session_scope() as session:
        token = revoke_token(session=session, token_ref=token_ref)
    console.print(f"revoked {token.id}")
