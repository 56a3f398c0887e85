"""The query's embedding overlaps the lexical routes: a pending vector is waited for only
when the dense route needs it, and /v1/search embeds on a thread of its own."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient

from memory.db import session_scope
from tests.integration.test_read_path import memory_user  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration

QUERY = "Where does my sister Ana live?"


class RecordedVector:
    """A pending vector that records when it is asked for, among the routes' calls."""

    def __init__(self, vector: np.ndarray, events: list[str]) -> None:
        self.vector = vector
        self.events = events

    def result(self, timeout: float | None = None) -> np.ndarray:
        self.events.append("vector")
        return self.vector


def test_a_pending_vector_is_awaited_after_bm25_and_ranks_as_a_ready_one(
    memory_user: tuple,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval import bm25
    from memory.retrieval.service import search_notes
    from memory.types import utcnow

    user, _, tenant = memory_user
    now = utcnow()  # one clock for both searches: activation decays with time
    settings = get_settings()
    vector = embed_query(QUERY, settings)
    events: list[str] = []
    route = bm25.bm25_route

    def recorded_bm25(*args: object, **kwargs: object) -> dict:
        events.append("bm25_window" if kwargs.get("window") else "bm25")
        return route(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25, "bm25_route", recorded_bm25)

    def search(query_vector: object) -> list[tuple[str, float]]:
        with session_scope() as session:
            hits = search_notes(
                session=session,
                viewer=Viewer(tenant_id=tenant, user_id=user, agent_id="helper"),
                query=QUERY,
                vector=query_vector,  # type: ignore[arg-type]
                top_k=5,
                settings=settings,
                now=now,
            )
        return [(str(hit.note.id), round(hit.score, 6)) for hit in hits]

    ready = search(vector)
    events.clear()
    pending = search(RecordedVector(vector, events))
    assert ready and pending == ready
    # Asked for once (the dense and window statements share its text form), after BM25.
    assert events.count("vector") == 1, events
    assert events.index("bm25") < events.index("vector"), events


def test_search_embeds_the_query_off_the_request_thread(
    api_client: TestClient,
    memory_user: tuple,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory.retrieval import read

    user, headers, _ = memory_user
    threads: list[str] = []
    embed = read.embed_query

    def recorded_embed(*args: object) -> np.ndarray:
        threads.append(threading.current_thread().name)
        return embed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(read, "embed_query", recorded_embed)
    body = {"user_id": user, "agent_id": "helper", "query": QUERY}
    response = api_client.post("/v1/search", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert any("Ana" in r["content"] for r in response.json()["results"])
    assert len(threads) == 1 and threads[0].startswith("embed"), threads
