"""Options and helpers shared by the per-user admin commands (stats, search, export, ...)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, agent_viewer
from memory.cli.common import err_console
from memory.cli.exit_codes import exit_code_of
from memory.config import get_settings
from memory.errors import InvalidInputError, MemoryServiceError
from memory.ops.users import require_known_user

CLI_ACTOR = "cli"
F = TypeVar("F", bound=Callable[..., Any])

user_option = click.option("--user", "user_id", required=True, help="Whose memories (required).")
tenant_option = click.option(
    "--tenant", default=None, help="Tenant (default: the configured tenant_id, `default`)."
)
agent_option = click.option(
    "--agent", "agent_id", default=None, help="See only what this agent may see."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


class DomainError(click.ClickException):
    """A MemoryServiceError shown as one line, exit 2 for bad input, 1 for failures."""

    def __init__(self, error: MemoryServiceError) -> None:
        super().__init__(error.message)
        self.exit_code = exit_code_of(error)


def domain_errors(command: F) -> F:
    """Turn domain errors into one clear line and a non-zero exit, also under CliRunner."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except MemoryServiceError as exc:
            raise DomainError(exc) from exc

    return wrapper  # type: ignore[return-value]


def tenant_of(tenant: str | None) -> str:
    return tenant or get_settings().tenant_id


def parse_id(value: str, what: str = "memory") -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise InvalidInputError(f"{value!r} is not a {what} id (a UUID)") from exc


def viewer_for(
    *, session: Session, tenant_id: str, user_id: str, agent_id: str | None = None
) -> Viewer:
    """The user's view (or an agent's), after checking that the user exists."""
    require_known_user(session=session, tenant_id=tenant_id, user_id=user_id)
    if agent_id is None:
        return Viewer(tenant_id, user_id, None)
    return agent_viewer(
        session=session,
        settings=get_settings(),
        tenant_id=tenant_id,
        user_id=user_id,
        agent_id=agent_id,
    )


def progress_bar() -> Progress:
    """A progress bar on stderr, so stdout stays clean for --json and pipes."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )
