"""Whose words a question asks about, through the real API and pipeline
(`memory.retrieval.speaker`): the user's own turn for "did I", the assistant's passage
for "you recommended", though the assistant's long reply repeats the question's words."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration

USER_TURN = "I finished reading The Nightingale on a rainy Sunday in March."
# The assistant's reply: paragraphs, each its own passage, that say the question's words
# as often as the user's turn does.
ASSISTANT_REPLY = "\n\n".join(
    [
        "If you want to finish reading The Nightingale quickly, the audiobook runs 17 hours "
        "and reading it at 1.5x speed helps you finish it in a week of commutes.",
        "Readers who finish The Nightingale often go on to reading All the Light We Cannot "
        "See, which shares its wartime France setting and its pace.",
        "Book clubs reading The Nightingale usually finish it in three meetings; the second "
        "half, in the occupied village, is where most readers finish fastest.",
        "I recommended The Women by Kristin Hannah for reading after you finish The "
        "Nightingale, because it has the same author's voice.",
    ]
)


@pytest.fixture(scope="module")
def reader(api_client: TestClient, celery_worker: str) -> Iterator[tuple[str, dict[str, str]]]:
    from tests.conftest import make_token

    tenant, user = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    headers = bearer(make_token("agent", tenant))
    base = {"user_id": user, "agent_id": "helper", "session_id": "books"}
    turns = [
        {"role": "user", "speaker": "Dana", "content": "Can you suggest books for my commute?"},
        {"role": "assistant", "content": ASSISTANT_REPLY},
        {"role": "user", "speaker": "Dana", "content": USER_TURN},
        {"role": "assistant", "content": "Lovely, a rainy Sunday is the best time for it."},
        {"role": "user", "speaker": "Dana", "content": "My daughter plays the cello."},
    ]
    episodes = [
        {**base, **turn, "occurred_at": f"2026-03-0{i + 1}T10:00:00Z"}
        for i, turn in enumerate(turns)
    ]
    answer = api_client.post("/v1/episodes", json={"episodes": episodes}, headers=headers)
    assert answer.status_code == 202, answer.text
    wait_for_episodes(answer.json()["episode_ids"], timeout=180)
    yield user, headers


def _results(client: TestClient, headers: dict[str, str], user: str, query: str) -> list[dict]:
    body = {"user_id": user, "agent_id": "helper", "query": query, "top_k": 5}
    answer = client.post("/v1/search", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def test_a_question_in_the_first_person_prefers_the_users_own_words(
    api_client: TestClient, reader: tuple[str, dict[str, str]]
) -> None:
    user, headers = reader
    found = _results(api_client, headers, user, "When did I finish reading The Nightingale?")
    assert "rainy Sunday" in found[0]["content"], found
    # The user's words keep their relevance; the assistant's are lowered.
    assert found[0]["explanation"]["speaker_boost"] == 0
    assert any(r["explanation"]["speaker_boost"] < 0 for r in found if r["origin"] == "assistant")


def test_a_question_about_what_the_assistant_said_prefers_its_words(
    api_client: TestClient, reader: tuple[str, dict[str, str]]
) -> None:
    user, headers = reader
    query = "Which book did you recommend after The Nightingale?"
    found = _results(api_client, headers, user, query)
    assert "The Women" in found[0]["content"], found
    assert found[0]["explanation"]["speaker_boost"] == 0
    assert any(r["explanation"]["speaker_boost"] < 0 for r in found if r["origin"] == "user")
