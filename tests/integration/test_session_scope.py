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


def test_a_statement_run_often_is_still_planned_for_its_values(database_url: str) -> None:
    """psycopg prepares a statement after its 5th run on a connection; PostgreSQL would
    then move to a generic plan that ignores the user, terms and vector the read path's
    plans depend on. Every connection forces a plan per execution instead."""
    statement = select(Episode.id).where(Episode.user_id == "nobody").limit(1)
    with session_scope() as session:
        for _ in range(12):
            session.execute(statement).all()
        plans = session.execute(
            text(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE 'SELECT episodes.id%'"
            )
        ).all()
    assert plans, "psycopg no longer prepares repeated statements"
    assert all(generic == 0 and custom > 0 for generic, custom in plans), plans
