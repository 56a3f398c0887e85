"""Schema migrations through Alembic, driven programmatically (no alembic.ini needed), and
the data rebuilds an upgrade needs after them (`rebuild_derived`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from memory.db import get_engine
from memory.db_url import resolve_database_url

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", (url or resolve_database_url()).replace("%", "%%"))
    return config


def upgrade_database(revision: str = "head", url: str | None = None) -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade_database(revision: str = "-1", url: str | None = None) -> None:
    command.downgrade(alembic_config(url), revision)


def current_revision() -> str | None:
    with get_engine().connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def rebuild_derived(
    report: Callable[[str], None] | None = None,
    *,
    sessions_per_batch: int = 50,
    max_seconds: float | None = None,
) -> int:
    """Rebuild every note derived under an earlier rule (memory.notes.rederive), batch by
    batch, each in its own transaction; return how many notes were rebuilt. Resumable:
    an interrupted run leaves whole batches done and the next run takes the rest. With
    `max_seconds`, no batch starts after that long: the rest is left to the next run (the
    maintenance queue's `tasks.maintenance.rebuild_derived`)."""
    from memory.db import session_scope
    from memory.notes.rederive import count_stale_derived, rebuild_derived_batch

    with session_scope() as session:
        total = count_stale_derived(session=session)
    if total == 0:
        return 0
    done, last_report = 0, time.monotonic()
    if report:
        report(f"rebuilding derived data of {total:,} notes (windows, evolved words)")
    started = time.monotonic()
    while True:
        if max_seconds is not None and time.monotonic() - started >= max_seconds:
            if report:
                report(f"rebuilt {done:,} of {total:,} notes; the workers rebuild the rest")
            return done
        with session_scope() as session:
            batch = rebuild_derived_batch(session=session, sessions=sessions_per_batch)
        if batch.sessions == 0:
            break
        done += batch.notes
        if report and time.monotonic() - last_report >= 5:
            report(f"rebuilt {done:,} of {total:,} notes")
            last_report = time.monotonic()
    if report:
        report(f"rebuilt derived data of {done:,} notes")
    return done


def derived_left() -> int:
    """Notes still waiting for the derived-data rebuild."""
    from memory.db import session_scope
    from memory.notes.rederive import count_stale_derived

    with session_scope() as session:
        return count_stale_derived(session=session)
