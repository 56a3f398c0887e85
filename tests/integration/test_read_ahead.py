"""What a user's searches read, read ahead (`memory.retrieval.warm`,
`memory.retrieval.readahead`): the relations listed are the user's partitions and
indexes with the dense route's graph first (the user's own graph instead of the shared
one, never another user's), their files are the server's, the user's active notes' rows
are read and no one else's, both keep to their budget, a warmer whose role may not read
the files reads the rows alone, and a search through the API starts it once per user and
again after the idle time, not when switched off."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from memory.db import APP_ROLE
from memory.notes.graphs import (
    apply_user_graphs,
    domain_graph_name,
    graph_name,
    plan_user_graphs,
)
from memory.retrieval.readahead import (
    RelationFile,
    list_shared_relations,
    list_user_relations,
    local_data_directory,
    read_ahead,
    read_user_rows,
)
from memory.retrieval.recent_users import STARTUP_LOCK_KEY, RecentUsers
from memory.retrieval.warm import UserWarmer
from tests.integration.test_user_graphs import store  # noqa: F401 - the fixture
from tests.support.helpers import BARE_NOTE, UNIT_VECTOR, insert_bare_note
from tests.support.partitions import add_bare_notes, neighbours, partition_of

pytestmark = pytest.mark.integration


def _names(relations: list[RelationFile]) -> list[str]:
    return [r.name for r in relations]


def test_a_user_reads_its_partitions_with_its_own_graph_first(store: Session) -> None:  # noqa: F811
    large, small, _ = neighbours(store)
    add_bare_notes(store, large, 6)
    add_bare_notes(store, small, 2)
    apply_user_graphs(session=store, plan=plan_user_graphs(session=store, min_notes=5))
    part = f"{partition_of(store, large):02d}"
    own = graph_name("t", large)

    mine = list_user_relations(session=store, tenant_id="t", user_id=large)
    names = _names(mine)
    assert names[0] == own and mine[0].rank == 0
    assert f"note_vectors_p{part}" in names and f"note_terms_p{part}" in names
    shared_graphs = [r.name for r in mine if r.name != own and "embedding" in r.name]
    assert shared_graphs == []  # the partition's graph, which its searches no longer walk
    assert [r.rank for r in mine] == sorted(r.rank for r in mine)

    theirs = _names(list_user_relations(session=store, tenant_id="t", user_id=small))
    assert own not in theirs  # another user's graph is never read for this one
    assert f"note_vectors_p{part}" in theirs
    graph = theirs[0]
    assert graph.startswith(f"note_vectors_p{part}") and "embedding" in graph

    assert list_user_relations(session=store, tenant_id="t", user_id="nobody") == []


def test_a_users_domain_graphs_come_last_and_no_one_elses(store: Session) -> None:  # noqa: F811
    user, neighbour, _ = neighbours(store)
    for who in (user, neighbour):
        add_bare_notes(store, who, 6)  # domain 'general'
        add_bare_notes(store, who, 3, "health")
    slices = {"min_notes": 1000, "slice_min_notes": 3, "slice_max_share": 0.5}
    apply_user_graphs(session=store, plan=plan_user_graphs(session=store, **slices))
    mine = list_user_relations(session=store, tenant_id="t", user_id=user)
    slice_graph = domain_graph_name("t", user, "health")
    assert mine[-1].name == slice_graph and mine[-1].rank == 3
    assert "embedding" in mine[0].name  # the partition's graph still first
    theirs = _names(list_user_relations(session=store, tenant_id="t", user_id=neighbour))
    assert slice_graph not in theirs and domain_graph_name("t", neighbour, "health") in theirs


def test_the_files_are_the_servers_own(store: Session) -> None:  # noqa: F811
    user, _, _ = neighbours(store)
    add_bare_notes(store, user, 3)
    directory = local_data_directory(session=store)
    served = store.execute(text("SELECT current_setting('data_directory')")).scalar_one()
    assert directory is not None and directory == Path(served)
    relations = list_user_relations(session=store, tenant_id="t", user_id=user)
    assert relations and all((directory / r.path).is_file() for r in relations)
    total = sum(r.size for r in relations)
    assert total > 0
    assert read_ahead(directory, relations, max_bytes=total) == total
    # The budget stops before the first relation that would exceed it, in order.
    first = relations[0].size
    assert read_ahead(directory, relations, max_bytes=first) == first
    assert read_ahead(directory, relations, max_bytes=first - 1) == 0


def _pending_note(session: Session, user: str) -> None:
    session.execute(
        insert_bare_note(),
        {**BARE_NOTE, "id": uuid.uuid4(), "u": user, "v": UNIT_VECTOR, "status": "pending"},
    )


def test_a_users_active_rows_are_read_within_the_budget(store: Session) -> None:  # noqa: F811
    user, other, _ = neighbours(store)
    add_bare_notes(store, user, 3)
    _pending_note(store, user)  # not searchable yet: not read
    add_bare_notes(store, other, 2)
    store.execute(text("ANALYZE notes"))
    row_bytes = store.execute(
        text("SELECT pg_relation_size('notes') / reltuples FROM pg_class WHERE relname = 'notes'")
    ).scalar_one()
    engine = create_engine(store.get_bind().url)

    def rows(max_bytes: float) -> int:
        with Session(engine) as session, session.begin():
            return read_user_rows(
                session=session, tenant_id="t", user_id=user, max_bytes=int(max_bytes)
            ).rows

    try:
        assert rows(1 << 30) == 3
        assert rows(2 * row_bytes + 1) == 2  # as many rows as the budget holds
        assert rows(row_bytes / 2) == 0
    finally:
        engine.dispose()


@pytest.fixture()
def warmer(store: Session) -> Iterator[tuple[UserWarmer, list[float]]]:  # noqa: F811
    """A warmer on the scratch database, with a clock the test moves."""
    engine = create_engine(store.get_bind().url)
    now = [0.0]

    @contextlib.contextmanager
    def open_session() -> Iterator[Session]:
        with Session(engine) as session:
            yield session

    yield UserWarmer(open_session, clock=lambda: now[0]), now
    engine.dispose()


def test_read_ahead_once_per_user_and_again_after_idle(
    store: Session,  # noqa: F811
    warmer: tuple[UserWarmer, list[float]],
) -> None:
    user, other, _ = neighbours(store)
    add_bare_notes(store, user, 3)
    add_bare_notes(store, other, 2)
    warm, clock = warmer
    budget = {"idle_seconds": 600, "max_bytes": 1 << 30}

    def size(relations: list[RelationFile]) -> int:
        return sum(r.size for r in relations)

    shared = size(list_shared_relations(session=store))
    mine = size(list_user_relations(session=store, tenant_id="t", user_id=user))
    theirs = size(list_user_relations(session=store, tenant_id="t", user_id=other))
    assert warm.note_search("t", user, **budget) is True  # the first search: shared too
    assert warm.wait_idle() and warm.read_aheads == 1 and warm.bytes_asked == shared + mine
    assert warm.rows_read == 3
    clock[0] = 599.0
    assert warm.note_search("t", user, **budget) is False  # searched 599 s ago
    clock[0] = 1198.0
    assert warm.note_search("t", user, **budget) is False  # each search restarts the wait
    assert warm.note_search("t", other, **budget) is True  # another user is new
    assert warm.wait_idle() and warm.bytes_asked == shared + mine + theirs
    assert warm.rows_read == 3 + 2
    clock[0] = 1798.0
    assert warm.note_search("t", user, **budget) is True  # idle: the shared indexes too
    assert warm.wait_idle() and warm.read_aheads == 3
    assert warm.bytes_asked == 2 * (shared + mine) + theirs
    assert warm.rows_read == 3 + 2 + 3


def test_at_startup_the_most_recent_users_are_read_ahead_first(
    store: Session,  # noqa: F811
    redis_url: str,
) -> None:
    import redis

    user, other, _ = neighbours(store)
    add_bare_notes(store, user, 3)
    add_bare_notes(store, other, 2)
    engine = create_engine(store.get_bind().url)
    client = redis.Redis.from_url(redis_url, decode_responses=True)

    @contextlib.contextmanager
    def open_session() -> Iterator[Session]:
        with Session(engine) as session:
            yield session

    recent = RecentUsers(lambda: client, key=f"test:recent:{uuid.uuid4().hex}")
    budget = {"idle_seconds": 600, "max_bytes": 1 << 30}
    try:
        before = UserWarmer(open_session, recent=recent)  # the API before its restart
        for who in (other, user):
            assert before.note_search("t", who, **budget) and before.wait_idle()
        assert recent.most_recent(10) == [("t", user), ("t", other)]

        # Restarted, with room for one user: the newest only, counted as searched.
        after = UserWarmer(open_session, recent=recent)
        assert after.read_ahead_recent(max_users=10, total_bytes=1, max_bytes=1 << 30)
        assert after.wait_idle() and after.read_aheads == 1 and after.rows_read == 3
        assert after.note_search("t", user, **budget) is False  # already read
        assert after.note_search("t", other, **budget) is True

        # A user who searched before its turn came is left to that search's read-ahead.
        again = UserWarmer(open_session, recent=recent)
        assert again.note_search("t", user, **budget) is True
        assert again.read_ahead_recent(max_users=10, total_bytes=1 << 30, max_bytes=1 << 30)
        assert again.wait_idle() and again.read_aheads == 2 and again.rows_read == 3 + 2
    finally:
        client.close()
        engine.dispose()


def test_the_api_reads_recent_users_ahead_once_per_start(
    api_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.api.app import read_ahead_recent_users
    from memory.clients.redis import get_redis
    from memory.config import reset_settings_cache

    get_redis().delete(STARTUP_LOCK_KEY)
    RecentUsers(get_redis).remember("t", f"u-{uuid.uuid4().hex[:8]}")
    try:
        assert read_ahead_recent_users() is True
        assert read_ahead_recent_users() is False  # another process of the same start
        get_redis().delete(STARTUP_LOCK_KEY)
        monkeypatch.setenv("MUMA_RETRIEVAL__READ_AHEAD_STARTUP_MB", "0")
        reset_settings_cache()
        assert read_ahead_recent_users() is False  # switched off
    finally:
        monkeypatch.undo()
        reset_settings_cache()
        get_redis().delete(STARTUP_LOCK_KEY)


def test_a_warmer_that_may_not_read_the_files_reads_the_rows(store: Session) -> None:  # noqa: F811
    user, _, _ = neighbours(store)
    add_bare_notes(store, user, 3)
    engine = create_engine(store.get_bind().url)

    @contextlib.contextmanager
    def open_session() -> Iterator[Session]:
        # The application's role may neither read the server's settings nor its files.
        with Session(engine) as session:
            session.execute(text(f"SET LOCAL ROLE {APP_ROLE}"))
            yield session

    warm = UserWarmer(open_session)
    try:
        assert warm.note_search("t", user, idle_seconds=600, max_bytes=1 << 30) is True
        assert warm.wait_idle() and warm.read_aheads == 1
        assert warm.bytes_asked == 0 and warm.rows_read == 3
    finally:
        engine.dispose()


def test_the_shared_indexes_are_the_notes_keys(store: Session) -> None:  # noqa: F811
    directory = local_data_directory(session=store)
    shared = list_shared_relations(session=store)
    assert [r.name for r in shared] == ["pk_notes", "ix_notes_session_turn"]
    assert directory is not None and all((directory / r.path).is_file() for r in shared)


def test_a_search_through_the_api_starts_the_read_ahead(
    api_client: TestClient, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.config import reset_settings_cache
    from memory.retrieval.read import WARMER

    headers = {"Authorization": f"Bearer {tokens['agent']}"}

    def search(user: str) -> None:
        body = {"user_id": user, "agent_id": "main", "query": "anything"}
        response = api_client.post("/v1/search", json=body, headers=headers)
        assert response.status_code == 200, response.text

    assert WARMER.wait_idle()
    before = WARMER.read_aheads
    first = f"u-{uuid.uuid4().hex[:8]}"
    search(first)
    search(first)
    assert WARMER.wait_idle() and WARMER.read_aheads == before + 1
    monkeypatch.setenv("MUMA_RETRIEVAL__READ_AHEAD", "false")
    reset_settings_cache()
    try:
        search(f"u-{uuid.uuid4().hex[:8]}")
        assert WARMER.wait_idle() and WARMER.read_aheads == before + 1
    finally:
        monkeypatch.undo()
        reset_settings_cache()
