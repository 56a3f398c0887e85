"""Slice graphs walked ahead of filtered searches (`memory.retrieval.graph_walk`): the
user's slices' graphs and no one else's, each scanned whole through the graph itself,
within the byte budget, and the warmer walks them after the rows unless told not to."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from memory.db import scope_session
from memory.notes.graphs import (
    apply_user_graphs,
    domain_graph_name,
    kind_graph_name,
    plan_user_graphs,
)
from memory.retrieval.foreground import ReadsInFlight
from memory.retrieval.graph_walk import (
    GraphsWalked,
    list_slice_graphs,
    walk_slice_graphs,
    walk_statement,
)
from memory.retrieval.warm import UserWarmer
from tests.integration.test_user_graphs import store  # noqa: F401 - the fixture
from tests.support.helpers import UNIT_VECTOR
from tests.support.partitions import add_bare_notes, neighbours

pytestmark = pytest.mark.integration

SLICES = {"min_notes": 1000, "slice_min_notes": 3, "slice_max_share": 0.5}


def _sliced(session: Session) -> tuple[str, str, str]:
    """Two users sharing a partition, each with a 'health' domain slice and a 'decision'
    kind slice (3 notes each) beside 7 general stable notes (more than half: no graph),
    their graphs built; a third user has no slice."""
    user, neighbour, alone = neighbours(session)
    for who in (user, neighbour):
        add_bare_notes(session, who, 7)
        add_bare_notes(session, who, 3, "health")
        add_bare_notes(session, who, 3, "general", "decision")
    add_bare_notes(session, alone, 3)
    apply_user_graphs(session=session, plan=plan_user_graphs(session=session, **SLICES))
    return user, neighbour, alone


@contextlib.contextmanager
def _transactions(session: Session) -> Iterator[Callable[[], AbstractContextManager[Session]]]:
    """Opens transactions on the database of `session` (the store autocommits)."""
    engine = create_engine(session.get_bind().url)

    @contextlib.contextmanager
    def begin() -> Iterator[Session]:
        with Session(engine) as opened, opened.begin():
            yield opened

    try:
        yield begin
    finally:
        engine.dispose()


def test_a_users_slice_graphs_are_listed_and_no_one_elses(store: Session) -> None:  # noqa: F811
    user, neighbour, alone = _sliced(store)
    mine = list_slice_graphs(session=store, tenant_id="t", user_id=user)
    expected = {
        domain_graph_name("t", user, "health"): ("domain", "health"),
        kind_graph_name("t", user, "decision"): ("kind", "decision"),
    }
    assert {g.name: (g.column, g.value) for g in mine} == expected
    assert [g.name for g in mine] == sorted(expected) and all(g.size > 0 for g in mine)
    theirs = {g.name for g in list_slice_graphs(session=store, tenant_id="t", user_id=neighbour)}
    assert theirs == {
        domain_graph_name("t", neighbour, "health"),
        kind_graph_name("t", neighbour, "decision"),
    }
    assert list_slice_graphs(session=store, tenant_id="t", user_id=alone) == []


def test_each_walk_scans_its_slice_through_the_slices_graph(store: Session) -> None:  # noqa: F811
    user, _, _ = _sliced(store)
    with _transactions(store) as begin:
        for graph in list_slice_graphs(session=store, tenant_id="t", user_id=user):
            params = {"tenant_id": "t", "user_id": user, "value": graph.value}
            with begin() as session:
                scope_session(session, tenant_id="t", user_id=user)
                session.execute(text("SET LOCAL enable_seqscan = off"))
                session.execute(text("SET LOCAL enable_sort = off"))
                explain = text(f"EXPLAIN {walk_statement(graph.column).text}")
                rows = session.execute(explain, {**params, "vector": UNIT_VECTOR})
                plan = "\n".join(rows.scalars())
            assert f"Index Scan using {graph.name}" in plan
    with pytest.raises(ValueError, match="slice column"):
        walk_statement("user_id; DROP TABLE notes")


def test_walks_keep_to_the_budget_and_to_the_user(store: Session) -> None:  # noqa: F811
    user, _, alone = _sliced(store)
    graphs = list_slice_graphs(session=store, tenant_id="t", user_id=user)
    total = sum(g.size for g in graphs)
    with _transactions(store) as begin:

        def walk(who: str, max_bytes: int) -> GraphsWalked:
            with begin() as session:
                return walk_slice_graphs(
                    session=session, tenant_id="t", user_id=who, max_bytes=max_bytes
                )

        # Every entry of the user's two slices, none of the neighbour's equal slices.
        assert walk(user, total) == GraphsWalked(2, 6, total)
        # A graph that does not fit is left out; a smaller one after it still fits.
        larger, smaller = sorted(graphs, key=lambda g: -g.size)
        if larger.size > smaller.size:
            assert walk(user, larger.size - 1) == GraphsWalked(1, 3, smaller.size)
        assert walk(user, min(g.size for g in graphs) - 1) == GraphsWalked(0, 0, 0)
        assert walk(alone, total) == GraphsWalked(0, 0, 0)


@pytest.mark.parametrize("walk_graphs", [True, False])
def test_the_warmer_walks_the_slices_after_the_rows(store: Session, walk_graphs: bool) -> None:  # noqa: F811
    user, _, _ = _sliced(store)
    with _transactions(store) as begin:
        warm = UserWarmer(begin, walk_graphs=walk_graphs)
        assert warm.note_search("t", user, idle_seconds=600, max_bytes=1 << 30)
        assert warm.wait_idle() and warm.read_aheads == 1 and warm.rows_read == 13
        assert warm.graphs_walked == (2 if walk_graphs else 0)


def test_a_walk_fetches_each_chunk_after_waiting_for_quiet(store: Session) -> None:  # noqa: F811
    user, _, _ = _sliced(store)
    total = sum(g.size for g in list_slice_graphs(session=store, tenant_id="t", user_id=user))
    fetched: list[int] = []
    with _transactions(store) as begin, begin() as session:
        walked = walk_slice_graphs(
            session=session,
            tenant_id="t",
            user_id=user,
            max_bytes=total,
            wait_quiet=lambda: fetched.append(len(fetched)),
            chunk=2,
        )
    assert walked == GraphsWalked(2, 6, total)
    # Each graph: before its two chunks (2 + 1 entries) and before finding its end.
    assert len(fetched) == 2 * 3


def test_the_warmers_walk_gives_way_to_a_search_in_progress(store: Session) -> None:  # noqa: F811
    user, _, _ = _sliced(store)
    reads = ReadsInFlight()
    with _transactions(store) as begin:
        warm = UserWarmer(begin, reads=reads)
        with reads.reading():
            assert warm.note_search("t", user, idle_seconds=600, max_bytes=1 << 30)
            # The files and rows are read; the walk waits while the search runs.
            assert not warm.wait_idle(timeout=1.0)
            assert warm.read_aheads == 1 and warm.graphs_walked == 0
        assert warm.wait_idle() and warm.graphs_walked == 2
