"""A filtered search answers a full top_k; the retrieval threshold still cuts elsewhere.

Old, weakly relevant notes fall below the ACT-R retrieval threshold. An unfiltered search
and /v1/context leave them out; a search with a filter fills its top_k with them after
every note above the threshold, each flagged `threshold_passed: false`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from memory.config import get_settings
from memory.db import session_scope
from memory.notes.models import Note
from memory.types import utcnow
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

FACTS = [
    "My daughter Lina plays the cello in the school orchestra.",
    "The quarterly budget review moved to the second Tuesday of March.",
    "Our kitchen tap has been leaking since the plumber's visit.",
    "I ran the Lisbon half marathon in one hour and fifty minutes.",
    "The office wifi password rotates on the first day of every month.",
]
TOP_K = len(FACTS)


@pytest.fixture(scope="module")
def faded_user(api_client: TestClient, celery_worker: str) -> Iterator[tuple[str, dict]]:
    """Five notes whose only access was ten years ago: only strong matches pass.

    Access recording is off meanwhile: a search's recorded access would refresh the notes
    it returned, and the next test would see them above the threshold.
    """
    from tests.conftest import make_token

    retrieval = get_settings().retrieval
    recording, retrieval.record_access = retrieval.record_access, False

    tenant, user = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    headers = bearer(make_token("agent", tenant))
    episodes = [
        {
            "user_id": user,
            "agent_id": "helper",
            "session_id": "s1",
            "role": "user",
            "speaker": "Alice",
            "content": text,
            "occurred_at": f"2024-0{i + 1}-10T10:00:00Z",
        }
        for i, text in enumerate(FACTS)
    ]
    response = api_client.post("/v1/episodes", json={"episodes": episodes}, headers=headers)
    wait_for_episodes(response.json()["episode_ids"], timeout=180)
    long_ago = utcnow() - timedelta(days=3650)
    with session_scope() as session:
        aged = session.execute(
            update(Note)
            .where(Note.tenant_id == tenant, Note.user_id == user)
            .values(
                access_times=[long_ago],
                access_count=1,
                first_access_at=long_ago,
                last_access_at=long_ago,
            )
        )
        assert aged.rowcount == len(FACTS)
    try:
        yield user, headers
    finally:
        retrieval.record_access = recording


def _search(client: TestClient, headers: dict, user: str, **extra: object) -> list[dict]:
    body = {"user_id": user, "agent_id": "helper", "query": "cello orchestra", **extra}
    response = client.post("/v1/search", json={**body, "top_k": TOP_K}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def _passed(results: list[dict]) -> list[bool]:
    return [r["explanation"]["threshold_passed"] for r in results]


def test_unfiltered_search_leaves_notes_below_the_threshold_out(
    api_client: TestClient, faded_user: tuple
) -> None:
    user, headers = faded_user
    results = _search(api_client, headers, user)
    assert results and "cello" in results[0]["content"]
    assert len(results) < TOP_K and all(_passed(results))


def test_filtered_search_fills_top_k_below_the_threshold_flagged_and_last(
    api_client: TestClient, faded_user: tuple
) -> None:
    user, headers = faded_user
    unfiltered = _search(api_client, headers, user)
    results = _search(api_client, headers, user, since="2024-01-01T00:00:00Z")
    flags = _passed(results)
    assert len(results) == TOP_K
    assert flags == sorted(flags, reverse=True) and False in flags
    # Above the threshold, the filtered answer is the unfiltered one (every note matches).
    assert [r["id"] for r in results if r["explanation"]["threshold_passed"]] == [
        r["id"] for r in unfiltered
    ]
    below = [r for r in results if not r["explanation"]["threshold_passed"]]
    assert all(r["explanation"]["base_level"] + r["explanation"]["spreading"] < 0 for r in below)


def test_a_filter_fills_only_from_its_own_slice(api_client: TestClient, faded_user: tuple) -> None:
    user, headers = faded_user
    results = _search(api_client, headers, user, since="2024-03-01T00:00:00Z")
    assert len(results) == 3  # the March, April and May notes: nothing outside the filter
    assert all(r["occurred_at"] >= "2024-03-01" for r in results)


def test_context_keeps_the_threshold(api_client: TestClient, faded_user: tuple) -> None:
    user, headers = faded_user
    body = {"user_id": user, "agent_id": "helper", "session_id": "s9", "prompt": "cello"}
    response = api_client.post("/v1/context", json=body, headers=headers)
    assert response.status_code == 200, response.text
    memories = response.json()["memories"]
    assert memories and len(memories) < TOP_K and all(_passed(memories))
