"""The read path's routes are planned for their values; the statements after them, which
fetch notes by id, keep one generic plan (`memory.db.plan_generically`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from memory.db import session_scope
from tests.integration.test_read_path import memory_user  # noqa: F401 - the fixture
from tests.integration.test_read_path_aside import search_as_helper

pytestmark = pytest.mark.integration


def _plan_mode(session: Any) -> str:
    return session.execute(text("SELECT current_setting('plan_cache_mode')")).scalar_one()


@pytest.fixture
def modes_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """The plan_cache_mode in force when BM25 and the candidates' statement run."""
    from memory.retrieval import bm25, service

    seen: dict[str, list[str]] = {"bm25": [], "candidates": []}
    route, load = bm25.bm25_route, service.load_candidates

    def recorded_route(session: Any, *args: Any, **kwargs: Any) -> dict:
        seen["bm25"].append(_plan_mode(session))
        return route(session, *args, **kwargs)

    def recorded_load(session: Any, *args: Any, **kwargs: Any) -> Any:
        seen["candidates"].append(_plan_mode(session))
        return load(session, *args, **kwargs)

    monkeypatch.setattr(bm25, "bm25_route", recorded_route)
    monkeypatch.setattr(service, "load_candidates", recorded_load)
    yield seen


def _search(
    tenant: str, user: str, now: datetime | None = None
) -> tuple[list[tuple[str, float]], str, int]:
    """(hits as (id, score), the plan_cache_mode once the search is done, the generic plans
    its connection's prepared statements have run), at `now`."""
    with session_scope(custom_plans=True) as session:
        hits = search_as_helper(session, tenant, user, now=now)
        mode = _plan_mode(session)
        generic = session.execute(
            text("SELECT coalesce(sum(generic_plans), 0) FROM pg_prepared_statements")
        ).scalar_one()
    return hits, mode, int(generic)


def test_routes_are_planned_per_run_and_the_reads_by_id_generically(
    memory_user: tuple[str, dict[str, str], str],  # noqa: F811
    modes_seen: dict[str, list[str]],
) -> None:
    user, _, tenant = memory_user
    hits, after, _ = _search(tenant, user)
    assert hits and after == "force_generic_plan"
    assert set(modes_seen["bm25"]) == {"force_custom_plan"}
    assert modes_seen["candidates"] == ["force_generic_plan"]
    # Set for the transaction only: the connection's next read plans its routes again.
    with session_scope(custom_plans=True) as session:
        assert _plan_mode(session) == "force_custom_plan"


def test_the_answer_is_the_same_once_the_generic_plans_are_cached(
    memory_user: tuple[str, dict[str, str], str],  # noqa: F811
) -> None:
    user, _, tenant = memory_user
    now = datetime.now(UTC)  # one clock: base levels move with it
    first, _, _ = _search(tenant, user, now)
    # psycopg prepares a statement on its sixth run on a connection, and only a prepared
    # statement keeps its generic plan: enough runs for every pooled connection.
    generic = 0
    for _ in range(40):
        again, _, generic_so_far = _search(tenant, user, now)
        assert again == first
        generic = max(generic, generic_so_far)
    assert generic > 0  # the generic plans did run
