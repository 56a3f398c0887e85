"""The dense route and a self-selecting window route run beside BM25 in transactions of
their own: the same answer, other backends, no wait for a slot, a budget that does not
wait for them, and a window route that scores the others' candidates waits for dense."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from memory.db import session_scope
from tests.integration.test_read_path import memory_user  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration

QUERY = "Where does my sister Ana live?"


@pytest.fixture
def dense_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Each dense route call: its thread and its backend's pid."""
    from memory.retrieval import routes

    calls: list[dict[str, Any]] = []
    route = routes.dense_route

    def recorded(session: Any, *args: Any, **kwargs: Any) -> dict:
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        calls.append({"thread": threading.current_thread().name, "pid": pid})
        return route(session, *args, **kwargs)

    monkeypatch.setattr(routes, "dense_route", recorded)
    yield calls


def search_as_helper(
    session: Any, tenant: str, user: str, **kwargs: Any
) -> list[tuple[str, float]]:
    """The agent "helper"'s top 5 for QUERY in `session`, as (id, score)."""
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval.service import search_notes

    settings = get_settings()
    hits = search_notes(
        session=session,
        viewer=Viewer(tenant_id=tenant, user_id=user, agent_id="helper"),
        query=QUERY,
        vector=embed_query(QUERY, settings),
        top_k=5,
        settings=settings,
        **kwargs,
    )
    return [(str(hit.note.id), round(hit.score, 6)) for hit in hits]


def _search(tenant: str, user: str, **kwargs: Any) -> tuple[list[tuple[str, float]], int]:
    """(hits as (id, score), the caller's backend pid)."""
    with session_scope(custom_plans=True) as session:
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        return search_as_helper(session, tenant, user, **kwargs), pid


@pytest.fixture
def window_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Each window BM25 call: its thread, and whether it scored given candidates."""
    from memory.retrieval import bm25

    calls: list[dict[str, Any]] = []
    route = bm25.bm25_route

    def recorded(*args: Any, **kwargs: Any) -> dict:
        if kwargs.get("window"):
            thread = threading.current_thread().name
            among = kwargs.get("among") is not None
            calls.append({"thread": thread, "among": among, "at": time.monotonic()})
        return route(*args, **kwargs)

    monkeypatch.setattr(bm25, "bm25_route", recorded)
    yield calls


def _aside() -> Any:
    return session_scope(custom_plans=True, aside=True)


def test_aside_the_dense_route_runs_in_another_transaction_and_ranks_the_same(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    dense_calls: list[dict[str, Any]],
) -> None:
    from memory.types import utcnow

    user, _, tenant = memory_user
    now = utcnow()  # one clock for both searches: activation decays with time
    inline, pid = _search(tenant, user, now=now)
    assert dense_calls == [{"thread": threading.current_thread().name, "pid": pid}]
    dense_calls.clear()
    beside, pid = _search(tenant, user, now=now, aside=_aside)
    assert inline and beside == inline
    assert len(dense_calls) == 1 and dense_calls[0]["thread"].startswith("aside")
    assert dense_calls[0]["pid"] != pid


def test_a_window_route_selecting_its_own_candidates_runs_aside_too(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    window_calls: list[dict[str, Any]],
) -> None:
    user, _, tenant = memory_user
    hits, _ = _search(tenant, user, aside=_aside)
    assert hits and len(window_calls) == 1, window_calls
    assert window_calls[0]["thread"].startswith("aside") and not window_calls[0]["among"]


def test_a_window_route_scoring_the_others_candidates_waits_for_the_dense_route(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    window_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.retrieval import bm25, routes

    user, _, tenant = memory_user
    # Every term is "too common": the window route scores the other routes' candidates.
    monkeypatch.setattr(bm25, "MATCH_MAX_NOTES", 0)
    dense_done: list[tuple[str, float]] = []
    route = routes.dense_route

    def slow_dense(*args: Any, **kwargs: Any) -> dict:
        time.sleep(0.3)  # long after BM25: the window route must still wait for it
        scores = route(*args, **kwargs)
        dense_done.append((threading.current_thread().name, time.monotonic()))
        return scores

    monkeypatch.setattr(routes, "dense_route", slow_dense)
    hits, _ = _search(tenant, user, aside=_aside)
    assert hits and len(dense_done) == 1 and dense_done[0][0].startswith("aside")
    assert len(window_calls) == 1 and window_calls[0]["among"], window_calls
    assert window_calls[0]["thread"] == threading.current_thread().name
    assert window_calls[0]["at"] >= dense_done[0][1]


def test_without_a_free_slot_the_dense_route_runs_in_the_callers_transaction(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    dense_calls: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.retrieval import aside

    user, _, tenant = memory_user
    monkeypatch.setattr(aside, "_SLOTS", threading.BoundedSemaphore(1))
    assert aside._SLOTS.acquire(blocking=False)  # every slot taken
    hits, pid = _search(tenant, user, aside=_aside)
    assert hits and dense_calls == [{"thread": threading.current_thread().name, "pid": pid}]


def test_a_budget_does_not_wait_for_a_slow_aside_route(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.retrieval import routes
    from memory.retrieval.budget import Deadline
    from memory.retrieval.candidates import SearchOptions

    user, _, tenant = memory_user
    route = routes.dense_route

    def slow(*args: Any, **kwargs: Any) -> dict:
        time.sleep(1.5)
        return route(*args, **kwargs)

    monkeypatch.setattr(routes, "dense_route", slow)
    deadline = Deadline.after(0.3)
    started = time.monotonic()
    hits, _ = _search(tenant, user, aside=_aside, options=SearchOptions(deadline=deadline))
    assert time.monotonic() - started < 1.2  # answered without the dense route
    # The lexical routes answered; the dense route was recorded as skipped, once.
    assert hits and deadline.skipped.count("dense") == 1


def test_search_runs_the_dense_route_aside(
    api_client: TestClient,
    memory_user: tuple,  # noqa: F811 - the imported fixture
    dense_calls: list[dict[str, Any]],
) -> None:
    user, headers, _ = memory_user
    body = {"user_id": user, "agent_id": "helper", "query": QUERY}
    response = api_client.post("/v1/search", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert any("Ana" in r["content"] for r in response.json()["results"])
    assert [c["thread"][:5] for c in dense_calls] == ["aside"], dense_calls


def test_window_cosines_are_looked_up_once_each_part_beside_the_dense_route(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the dense route aside, its candidates' window cosines are read in its
    transaction and the lexical candidates' in the request's while it runs, and the
    window route scores what it scores inline."""
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval import routes
    from memory.retrieval.candidates import SearchOptions, run_routes
    from memory.retrieval.scope import ReadScope

    user, _, tenant = memory_user
    calls: list[tuple[str, list[Any]]] = []
    similarity = routes.window_similarity

    def recorded(session: Any, viewer: Any, ids: list[Any], vector: str) -> dict:
        calls.append((threading.current_thread().name, list(ids)))
        return similarity(session, viewer, ids, vector)

    monkeypatch.setattr(routes, "window_similarity", recorded)
    scope = ReadScope(Viewer(tenant_id=tenant, user_id=user, agent_id="helper"))
    vector = embed_query(QUERY, get_settings())
    options = SearchOptions(routes=("bm25", "dense", "dense_window"))
    with session_scope(custom_plans=True) as session:
        inline = run_routes(session, scope, QUERY, vector, options)
    assert [thread for thread, _ in calls] == [threading.current_thread().name]
    calls.clear()
    with session_scope(custom_plans=True) as session:
        beside = run_routes(session, scope, QUERY, vector, options, aside=_aside)
    threads = {thread.split("_")[0] for thread, _ in calls}
    assert len(calls) >= 2 and {"aside", threading.current_thread().name} <= threads, calls
    aside_ids = next(ids for thread, ids in calls if thread.startswith("aside"))
    assert set(aside_ids) <= set(beside["dense"])
    looked_up = {note_id for _, ids in calls for note_id in ids}
    assert looked_up == set(beside["bm25"]) | set(beside["dense"])
    assert beside["dense_window"].keys() == inline["dense_window"].keys()
    for note_id, cosine in inline["dense_window"].items():
        assert beside["dense_window"][note_id] == pytest.approx(cosine)
