"""session_scope: one transaction by default; with autocommit, each statement on its own."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, text

from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes

pytestmark = pytest.mark.integration


class InterruptedWorkError(Exception):
    pass


def _capture_then_fail(tenant_id: str, user_id: str, *, autocommit: bool) -> uuid.UUID:
    episode = EpisodeInput(
        user_id=user_id, agent_id="main", session_id="s1", role="user", content="hello"
    )
    captured: list[uuid.UUID] = []
    with pytest.raises(InterruptedWorkError), session_scope(autocommit=autocommit) as session:
        [(episode_id, _)] = capture_episodes(
            session=session, tenant_id=tenant_id, episodes=[episode]
        )
        captured.append(episode_id)
        raise InterruptedWorkError
    return captured[0]


def _exists(episode_id: uuid.UUID) -> bool:
    with session_scope() as session:
        return session.scalar(select(Episode.id).where(Episode.id == episode_id)) is not None


def test_a_failing_unit_of_work_rolls_back_its_statements(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    assert not _exists(_capture_then_fail(tenant_id, user_id, autocommit=False))


def test_autocommit_commits_each_statement_when_it_runs(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    # What lets a capture answer without BEGIN and COMMIT round trips: its one INSERT is
    # durable as soon as it returns.
    assert _exists(_capture_then_fail(tenant_id, user_id, autocommit=True))


def _plans_after_repeats(*, custom_plans: bool) -> list[tuple[int, int]]:
    """(generic, custom) plan counts of a statement run 12 times on one connection."""
    statement = select(Episode.id).where(Episode.user_id == "nobody").limit(1)
    with session_scope(custom_plans=custom_plans) as session:
        for _ in range(12):
            session.execute(statement).all()
        return [
            (int(generic), int(custom))
            for generic, custom in session.execute(
                text(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                    " WHERE statement LIKE 'SELECT episodes.id%'"
                )
            )
        ]


def test_reads_with_custom_plans_are_planned_for_their_values(database_url: str) -> None:
    """psycopg prepares a statement after its 5th run on a connection; PostgreSQL would
    then move to a generic plan that ignores the user, terms and vector the read path's
    plans depend on. A `custom_plans` scope plans every execution; other scopes keep the
    cheaper cached generic plans."""
    custom = _plans_after_repeats(custom_plans=True)
    assert custom, "psycopg no longer prepares repeated statements"
    assert all(generic == 0 and planned > 0 for generic, planned in custom), custom
    cached = _plans_after_repeats(custom_plans=False)
    assert cached and any(generic > 0 for generic, _ in cached), cached
