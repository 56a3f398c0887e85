"""/v1/context's time budget counts from the request's arrival: time a request spent
waiting (for a thread, for its token check) is spent budget, so under load the block
still comes back about timeout_ms after the request was sent, not after it was picked up."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from memory.access.tokens import Principal
from memory.api.deps import get_principal
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

QUEUED_SECONDS = 0.4


@pytest.fixture(scope="module")
def dog_owner(api_client: TestClient, celery_worker: str) -> tuple[dict[str, str], str]:
    from tests.conftest import make_token

    headers = bearer(make_token("agent", f"t-{uuid.uuid4().hex[:8]}"))
    user = f"u-{uuid.uuid4().hex[:8]}"
    episode = {
        "user_id": user,
        "agent_id": "helper",
        "session_id": "s1",
        "role": "user",
        "speaker": "Alice",
        "content": "I adopted a beagle called Biscuit in 2021.",
    }
    response = api_client.post("/v1/episodes", json={"episodes": [episode]}, headers=headers)
    wait_for_episodes(response.json()["episode_ids"], timeout=180)
    return headers, user


@pytest.fixture()
def queued_requests(api_client: TestClient) -> Iterator[None]:
    """Every request waits QUEUED_SECONDS before its handler runs, as behind a busy pool."""
    app = api_client.app

    def slow_principal(request: Request) -> Principal:
        time.sleep(QUEUED_SECONDS)
        headers = request.headers
        return get_principal(request, headers.get("authorization"), headers.get("x-muma-tenant"))

    app.dependency_overrides[get_principal] = slow_principal  # type: ignore[attr-defined]
    yield
    app.dependency_overrides.pop(get_principal)  # type: ignore[attr-defined]


def _context(client: TestClient, headers: dict[str, str], user: str, timeout_ms: int) -> dict:
    body = {
        "user_id": user,
        "agent_id": "helper",
        "session_id": "s-budget",
        "prompt": "What is the name of my dog?",
        "timeout_ms": timeout_ms,
    }
    response = client.post("/v1/context", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_budget_spent_waiting_returns_at_once_flagged_as_timed_out(
    api_client: TestClient, dog_owner: tuple, queued_requests: None
) -> None:
    headers, user = dog_owner
    timeout_ms = int(QUEUED_SECONDS * 1000 / 2)
    started = time.monotonic()
    reply = _context(api_client, headers, user, timeout_ms=timeout_ms)
    waited_ms = (time.monotonic() - started) * 1000
    assert reply["timed_out"] is True and reply["context"] == "" and reply["memories"] == []
    # The answer does not wait for the stalled handler: it comes at timeout_ms, within
    # api.deadline_margin_ms (memory.api.deadline), and took_ms counts from the arrival.
    assert timeout_ms <= reply["took_ms"] <= timeout_ms + 100
    assert waited_ms < QUEUED_SECONDS * 1000


def test_what_is_left_of_the_budget_after_waiting_is_still_used(
    api_client: TestClient, dog_owner: tuple, queued_requests: None
) -> None:
    headers, user = dog_owner
    reply = _context(api_client, headers, user, timeout_ms=30000)
    assert reply["timed_out"] is False and "Biscuit" in reply["context"], reply
    assert reply["took_ms"] >= QUEUED_SECONDS * 1000


def test_a_search_whose_budget_ran_out_in_the_queue_does_no_work() -> None:
    from memory.api.routes.context import _search_within
    from memory.retrieval.budget import Deadline
    from memory.retrieval.service import SearchOptions

    deadline = Deadline(at=time.monotonic() - 1)
    options = SearchOptions(deadline=deadline)
    # No principal or body is touched: nothing is read for a reply already sent.
    assert _search_within(time.monotonic() - 0.001, None, None, options) == ([], [], [])  # type: ignore[arg-type]
    assert deadline.partial and deadline.skipped == ["search"]
