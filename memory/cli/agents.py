"""`muma agents add|list|update`: which domains an agent sees, and private notes or not."""

from __future__ import annotations

import click
from rich.table import Table

from memory.access.agents import AgentView, list_agents, update_agent, upsert_agent
from memory.access.models import Agent
from memory.cli.common import console, require_schema
from memory.config import get_settings
from memory.db import session_scope

CLI_ACTOR = "cli"

_tenant_option = click.option(
    "--tenant", default=None, help="Tenant (default: the configured tenant_id)."
)
_domains_option = click.option(
    "--domains", default=None, help="Comma-separated domains, e.g. finance,health (replaces)."
)
_private_option = click.option(
    "--can-see-private/--no-can-see-private",
    default=None,
    help="Whether the agent may read other agents' private notes.",
)
_name_option = click.option("--name", default=None, help="Display name.")


@click.group()
def agents() -> None:
    """Agents: domains they may read (scoped notes) and access to private notes.

    \b
    Examples:
      muma agents add coach --domains health,fitness --name "Health coach"
      muma agents update coach --can-see-private
      muma agents list
    """


def _split(domains: str | None) -> list[str] | None:
    return None if domains is None else [d for d in domains.split(",") if d.strip()]


def _describe(agent: Agent) -> str:
    domains = ", ".join(agent.domains or []) or "no domains"
    private = "can see private notes" if agent.can_see_private else "no private notes"
    return f"{agent.agent_id} ({domains}; {private})"


@agents.command()
@click.argument("agent_id")
@_tenant_option
@_domains_option
@_private_option
@_name_option
def add(
    agent_id: str,
    tenant: str | None,
    domains: str | None,
    can_see_private: bool | None,
    name: str | None,
) -> None:
    """Add an agent (or update the given fields of an existing one).

    \b
    Example:
      muma agents add finance-bot --domains finance,health --name "Finance bot"
    """
    require_schema()
    with session_scope() as session:
        agent, created = upsert_agent(
            session=session,
            tenant_id=tenant or get_settings().tenant_id,
            agent_id=agent_id,
            actor=CLI_ACTOR,
            display_name=name,
            domains=_split(domains),
            can_see_private=can_see_private,
        )
        line = f"{'added' if created else 'updated'} agent {_describe(agent)}"
    console.print(line)


@agents.command()
@click.argument("agent_id")
@_tenant_option
@_domains_option
@_private_option
@_name_option
def update(
    agent_id: str,
    tenant: str | None,
    domains: str | None,
    can_see_private: bool | None,
    name: str | None,
) -> None:
    """Change an existing agent; options not given stay as they are.

    \b
    Example:
      muma agents update finance-bot --no-can-see-private
    """
    require_schema()
    with session_scope() as session:
        agent = update_agent(
            session=session,
            tenant_id=tenant or get_settings().tenant_id,
            agent_id=agent_id,
            actor=CLI_ACTOR,
            display_name=name,
            domains=_split(domains),
            can_see_private=can_see_private,
        )
        line = f"updated agent {_describe(agent)}"
    console.print(line)


@agents.command(name="list")
@_tenant_option
def list_command(tenant: str | None) -> None:
    """List agents with their effective domains (database and configuration merged).

    \b
    Example:
      muma agents list --tenant default
    """
    require_schema()
    settings = get_settings()
    with session_scope() as session:
        rows: list[AgentView] = list_agents(
            session=session, tenant_id=tenant or settings.tenant_id, settings=settings
        )
    table = Table("agent", "name", "domains", "private", "source")
    for a in rows:
        table.add_row(
            a.agent_id,
            a.display_name or "",
            ", ".join(a.domains),
            "yes" if a.can_see_private else "no",
            a.source,
        )
    console.print(table)
