"""The erasure catalog (`memory.erasure.catalog`) against the database's own catalog: every
table of the schema is listed (a table added later without a row fails here), every
listed table exists, each scope's columns are there, and the erasure plan reaches every
place that can hold a user's rows."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.db import session_scope
from memory.erasure.catalog import PLACE_BY_TABLE, PLACES
from memory.erasure.plan import PARENTS, SCOPE_PARENT, Target, condition, units

pytestmark = pytest.mark.integration

# Every table of the schema but partitions (they are their parent's rows).
TABLES = text(
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
)
COLUMNS = text(
    "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = current_schema() AND c.relname = :table AND a.attnum > 0"
    " AND NOT a.attisdropped"
)


def uncatalogued(session: Session) -> set[str]:
    return set(session.execute(TABLES).scalars()) - set(PLACE_BY_TABLE)


def test_every_table_of_the_schema_is_in_the_catalog(database_url: str) -> None:
    with session_scope() as session:
        tables = set(session.execute(TABLES).scalars())
        assert uncatalogued(session) == set(), "add these tables to memory.erasure.catalog"
    assert set(PLACE_BY_TABLE) - tables == set(), "the catalog names tables that do not exist"
    assert len(PLACES) == len(PLACE_BY_TABLE), "a table is listed twice"


def test_a_table_added_later_is_caught(database_url: str) -> None:
    """The check above fails for a new table nobody listed (created and rolled back)."""
    name = f"new_table_{uuid.uuid4().hex[:6]}"
    with session_scope() as session:
        session.execute(text(f"CREATE TABLE {name} (id int, secret text)"))
        assert uncatalogued(session) == {name}
        session.rollback()


def _columns(session: Session, table: str) -> set[str]:
    return set(session.execute(COLUMNS, {"table": table}).scalars())


def test_each_place_has_the_columns_its_scope_finds_rows_by(database_url: str) -> None:
    with session_scope() as session:
        for place in PLACES:
            columns = _columns(session, place.table)
            if place.scope in ("user", "mirror"):
                assert {"tenant_id", "user_id"} <= columns, place.table
            if place.scope in SCOPE_PARENT:
                assert SCOPE_PARENT[place.scope][0] in columns, place.table
            if place.scope == "tenant":
                assert "tenant_id" in columns, place.table


@pytest.mark.parametrize("whole_tenant", [False, True])
def test_the_plan_reaches_every_place_with_rows_to_erase(whole_tenant: bool) -> None:
    target = Target("t", None if whole_tenant else "u", uuid.uuid4())
    erasable = {p.table for p in PLACES if condition(p, target) is not None}
    plan = units(whole_tenant)
    reached = {u.table for u in plan} | {m for u in plan for m in u.mirrors}
    assert reached == erasable
    assert [u.table for u in plan[: len(PARENTS)]] == list(PARENTS)
    assert plan[-1].table == "api_tokens"  # events are found through the tokens
    assert ("alembic_version" in erasable) is False
    assert ("erasures" in erasable) is whole_tenant  # a user's own record stays
    assert "agents" not in erasable or whole_tenant


def test_erasure_tasks_are_on_the_maintenance_queue_and_picked_up_by_beat() -> None:
    from datetime import timedelta

    import tasks.erasure  # noqa: F401 - registers the tasks
    from memory.config import load_settings
    from schedules.beat import beat_schedule
    from tasks.app import app

    for name in ("tasks.erasure.erase", "tasks.erasure.resume_erasures"):
        assert app.amqp.router.route({}, name)["queue"].name == "maintenance"
    entry = beat_schedule(load_settings())["resume-erasures"]
    assert entry["task"] == "tasks.erasure.resume_erasures" in app.tasks
    assert entry["schedule"] == timedelta(minutes=5)
