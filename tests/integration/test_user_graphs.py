"""Dedicated HNSW graphs (`memory.notes.graphs`): a large user sharing its partition of
note_vectors gets a partial graph of its own, which its searches use; a user alone in
its partition or below the threshold gets none; a large domain slice that is a minority
of its user's vectors gets one, which searches filtered to that one domain use; so
does a large kind slice, which searches filtered to it or to several kinds use;
planning is idempotent; a graph no longer needed, or left invalid, is dropped. Run on a
scratch database, so that the other tests' users do not count."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from memory.notes.graphs import (
    LOCK_KEY,
    apply_user_graphs,
    domain_graph_name,
    graph_name,
    kind_graph_name,
    plan_user_graphs,
    update_user_graphs,
)
from memory.ops.migrations import upgrade_database
from memory.retrieval.scope import SearchFilters
from tests.support.helpers import UNIT_VECTOR
from tests.support.partitions import add_bare_notes, neighbours

pytestmark = pytest.mark.integration


@pytest.fixture()
def store(scratch_database: str) -> Iterator[Session]:
    """An autocommit session on a migrated scratch database."""
    upgrade_database("head", url=scratch_database)
    engine = create_engine(scratch_database, isolation_level="AUTOCOMMIT")
    with Session(engine) as session:
        yield session
    engine.dispose()


def _graphs(session: Session) -> dict[str, str]:
    named = "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE :prefix"
    rows = session.execute(text(named), {"prefix": "ix_note_vectors_user_%"})
    return {row.indexname: row.indexdef for row in rows}


def test_a_large_user_sharing_its_partition_gets_a_graph_its_searches_use(
    store: Session,
) -> None:
    large, small, alone = neighbours(store)
    add_bare_notes(store, large, 6)
    add_bare_notes(store, small, 2)
    add_bare_notes(store, alone, 6)
    plan = plan_user_graphs(session=store, min_notes=5)
    assert [g.user_id for g in plan.create] == [large] and not plan.drop
    apply_user_graphs(session=store, plan=plan)
    graphs = _graphs(store)
    assert set(graphs) == {graph_name("t", large)}
    definition = graphs[graph_name("t", large)]
    assert "USING hnsw (embedding vector_cosine_ops)" in definition
    assert f"user_id)::text = '{large}'" in definition and "tenant_id)::text = 't'" in definition
    # The dense route's own statement, planned for the values (as the read path's
    # force_custom_plan connections do); no sequential scan on these tiny tables.
    assert graph_name("t", large) in _dense_plan(store, large)
    assert graph_name("t", large) not in _dense_plan(store, alone)
    again = plan_user_graphs(session=store, min_notes=5)
    assert not again.create and not again.drop and again.keep == [graph_name("t", large)]


def _dense_plan(session: Session, user: str, filters: SearchFilters | None = None) -> str:
    """EXPLAIN of the dense route's pool statement for `user` as agent `main`."""
    from memory.access.policy import Viewer
    from memory.retrieval import routes as r
    from memory.retrieval.scope import ReadScope

    scope = ReadScope(Viewer("t", user, "main"), filters or SearchFilters())
    statement = r._dense_pool_statement(scope.shape, 100)
    params = {**statement.constants, **scope.params, "query_vector": UNIT_VECTOR, "pool_size": 200}
    driver = session.connection().connection.driver_connection
    driver.execute("SET plan_cache_mode = force_custom_plan")
    driver.execute("SET enable_seqscan = off")
    return "\n".join(row[0] for row in driver.execute("EXPLAIN " + statement.sql, params))


def test_a_large_domain_slice_gets_a_graph_its_filtered_searches_use(store: Session) -> None:
    user, neighbour, _ = neighbours(store)
    add_bare_notes(store, user, 6, "health")
    add_bare_notes(store, user, 6, "it's")  # a domain the DDL must quote
    add_bare_notes(store, user, 14, "general")  # 54 % of the user's: its graph is enough
    add_bare_notes(store, neighbour, 2, "health")
    slices = {"min_notes": 1000, "slice_min_notes": 5, "slice_max_share": 0.5}
    plan = plan_user_graphs(session=store, **slices)
    health, quoted = (domain_graph_name("t", user, d) for d in ("health", "it's"))
    assert sorted(g.name for g in plan.create) == sorted([health, quoted])
    assert {g.domain for g in plan.create} == {"health", "it's"}
    assert plan_user_graphs(session=store, min_notes=1000).create == []  # slices asked for
    apply_user_graphs(session=store, plan=plan)
    graphs = _graphs(store)
    assert set(graphs) == {health, quoted} and "(domain)::text = 'it''s'" in graphs[quoted]
    assert health.startswith(graph_name("t", user) + "_")  # found by the user's name
    # Filtered to that one domain, the dense route walks the slice's graph; filtered to
    # two domains, unfiltered, or another user's search, it does not.
    assert health in _dense_plan(store, user, SearchFilters(domains=("health",)))
    assert health not in _dense_plan(store, user, SearchFilters(domains=("health", "it's")))
    assert health not in _dense_plan(store, user)
    assert health not in _dense_plan(store, neighbour, SearchFilters(domains=("health",)))
    again = plan_user_graphs(session=store, **slices)
    assert not again.create and not again.drop and sorted(again.keep) == sorted([health, quoted])
    # The slice shrinks below the threshold: its graph goes, the other stays.
    store.execute(text("DELETE FROM notes WHERE user_id = :u AND domain = 'it''s'"), {"u": user})
    shrunk = plan_user_graphs(session=store, **slices)
    assert shrunk.drop == [quoted] and shrunk.keep == [health] and not shrunk.create


def test_large_kind_slices_get_graphs_that_kinds_filters_use_one_pool_each(
    store: Session,
) -> None:
    user, neighbour, _ = neighbours(store)
    add_bare_notes(store, user, 6, kind="decision")
    add_bare_notes(store, user, 6, kind="preference")
    add_bare_notes(store, user, 2, kind="knowledge")  # below the threshold: no graph
    add_bare_notes(store, user, 16, kind="episodic")  # 53 % of the user's: its graph is enough
    add_bare_notes(store, neighbour, 2, kind="decision")
    slices = {"min_notes": 1000, "slice_min_notes": 5, "slice_max_share": 0.5}
    plan = plan_user_graphs(session=store, **slices)
    decision, preference = (kind_graph_name("t", user, k) for k in ("decision", "preference"))
    assert sorted(g.name for g in plan.create) == sorted([decision, preference])
    assert {g.kind for g in plan.create} == {"decision", "preference"}
    assert {g.domain for g in plan.create} == {None}
    apply_user_graphs(session=store, plan=plan)
    graphs = _graphs(store)
    assert set(graphs) == {decision, preference}
    assert "(kind)::text = 'decision'" in graphs[decision]
    assert decision.startswith(graph_name("t", user) + "_")  # found by the user's name
    # Filtered to one kind or to several, each kind's pool comes from its own graph; a
    # kind without one, an unfiltered search or another user's search use none of them.
    assert decision in _dense_plan(store, user, SearchFilters(kinds=("decision",)))
    both = _dense_plan(store, user, SearchFilters(kinds=("preference", "decision")))
    assert decision in both and preference in both
    mixed = _dense_plan(store, user, SearchFilters(kinds=("decision", "knowledge")))
    assert decision in mixed and preference not in mixed
    assert decision not in _dense_plan(store, user)
    assert decision not in _dense_plan(store, neighbour, SearchFilters(kinds=("decision",)))
    again = plan_user_graphs(session=store, **slices)
    assert not again.create and sorted(again.keep) == sorted([decision, preference])


def test_graphs_no_longer_needed_or_invalid_are_dropped(store: Session) -> None:
    large, small, _ = neighbours(store)
    add_bare_notes(store, large, 6)
    add_bare_notes(store, small, 2)
    apply_user_graphs(session=store, plan=plan_user_graphs(session=store, min_notes=5))
    name = graph_name("t", large)
    # An interrupted CONCURRENTLY build leaves the index invalid: built again.
    store.execute(
        text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:n AS regclass)"),
        {"n": name},
    )
    rebuilt = plan_user_graphs(session=store, min_notes=5)
    assert rebuilt.drop == [name] and [g.name for g in rebuilt.create] == [name]
    apply_user_graphs(session=store, plan=rebuilt)
    valid = text("SELECT indisvalid FROM pg_index WHERE indexrelid = CAST(:n AS regclass)")
    assert store.execute(valid, {"n": name}).scalar_one() is True
    # Its neighbour leaves the partition: the user is alone there, the graph goes.
    store.execute(text("DELETE FROM notes WHERE user_id = :u"), {"u": small})
    gone = plan_user_graphs(session=store, min_notes=5)
    assert gone.drop == [name] and not gone.create
    apply_user_graphs(session=store, plan=gone)
    assert _graphs(store) == {}


def test_one_run_at_a_time(store: Session, scratch_database: str) -> None:
    large, small, _ = neighbours(store)
    add_bare_notes(store, large, 6)
    add_bare_notes(store, small, 2)
    other = create_engine(scratch_database, isolation_level="AUTOCOMMIT")
    try:
        with other.connect() as holder:
            holder.execute(text("SELECT pg_advisory_lock(:k)"), {"k": LOCK_KEY})
            assert update_user_graphs(session=store, min_notes=5) is None
            assert _graphs(store) == {}
            holder.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": LOCK_KEY})
        plan = update_user_graphs(session=store, min_notes=5)
        assert plan is not None and set(_graphs(store)) == {graph_name("t", large)}
    finally:
        other.dispose()


def test_cli_plans_and_builds(store: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.cli.main import cli
    from memory.config import reset_settings_cache
    from memory.db import dispose_engines

    large, small, _ = neighbours(store)
    add_bare_notes(store, large, 6)
    add_bare_notes(store, small, 2)
    monkeypatch.setenv("MUMA_DATABASE_URL", str(store.get_bind().url.render_as_string(False)))
    reset_settings_cache()
    dispose_engines()
    try:
        runner = CliRunner()
        dry = runner.invoke(cli, ["db", "user-graphs", "--min-notes", "5", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert f"t/{large}" in dry.output and "would build 1" in dry.output
        assert _graphs(store) == {}
        built = runner.invoke(cli, ["db", "user-graphs", "--min-notes", "5"])
        assert built.exit_code == 0, built.output
        assert "built 1" in built.output and set(_graphs(store)) == {graph_name("t", large)}
        refused = runner.invoke(cli, ["db", "user-graphs", "--min-notes", "0"])
        assert refused.exit_code != 0 and "min-notes" in refused.output
    finally:
        monkeypatch.undo()
        reset_settings_cache()
        dispose_engines()
