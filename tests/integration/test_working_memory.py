"""L1 working memory: Redis items per session, merge, TTL, access rules, promotion."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.clients.redis import get_redis
from memory.config import WorkingSettings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.working.service import ItemInput, list_items, put_items, session_key
from tests.conftest import make_token
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration


def _put(
    client: TestClient, token: str, user_id: str, session_id: str, items: list[dict[str, object]]
) -> dict[str, object]:
    response = client.put(
        f"/v1/sessions/{session_id}/working",
        json={"user_id": user_id, "agent_id": "planner", "items": items},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    return response.json()


def _get(client: TestClient, token: str, session_id: str, **params: str) -> list[dict[str, object]]:
    response = client.get(
        f"/v1/sessions/{session_id}/working", params=params, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    return response.json()["items"]


def test_put_merges_by_content_and_refreshes_ttl(
    api_client: TestClient,
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
    session_id: str,
) -> None:
    agent = tokens["agent"]
    _put(
        api_client,
        agent,
        user_id,
        session_id,
        [
            {"content": "The user wants the report by Friday.", "metadata": {"turn": 1}},
            {"content": "Draft uses the quarterly numbers.", "activation": 0.3},
        ],
    )
    merged = _put(
        api_client,
        agent,
        user_id,
        session_id,
        [
            {
                "content": "the user wants  the report by friday.",
                "activation": 0.5,
                "metadata": {"source": "chat"},
            },
        ],
    )
    assert merged["items"][0]["activation"] == pytest.approx(1.5)
    items = _get(api_client, agent, session_id, user_id=user_id, agent_id="other-agent")
    assert [i["content"] for i in items] == [
        "The user wants the report by Friday.",
        "Draft uses the quarterly numbers.",
    ]
    first = items[0]
    assert first["hits"] == 2 and first["agent_id"] == "planner"
    assert first["metadata"] == {"turn": 1, "source": "chat"}
    ttl = get_redis().ttl(session_key(tenant_id, user_id, session_id))
    assert 0 < ttl <= 86400


def test_working_memory_never_crosses_users(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str, session_id: str
) -> None:
    _put(api_client, tokens["agent"], user_id, session_id, [{"content": "Secret plan A."}])
    other_user = f"u-{uuid.uuid4().hex[:8]}"
    # The same session id under another user is another, empty working memory.
    assert _get(api_client, tokens["agent"], session_id, user_id=other_user, agent_id="x") == []
    # A token bound to another user may not read or write this user's session.
    bound = make_token("agent", tenant_id, other_user)
    denied = api_client.get(
        f"/v1/sessions/{session_id}/working",
        params={"user_id": user_id, "agent_id": "planner"},
        headers=bearer(bound),
    )
    assert denied.status_code == 403
    denied_put = api_client.put(
        f"/v1/sessions/{session_id}/working",
        json={"user_id": user_id, "agent_id": "planner", "items": [{"content": "hijack"}]},
        headers=bearer(bound),
    )
    assert denied_put.status_code == 403
    # Another tenant's token sees nothing of it.
    foreign = make_token("agent", f"t-{uuid.uuid4().hex[:8]}")
    assert _get(api_client, foreign, session_id, user_id=user_id, agent_id="planner") == []


def test_roles_for_working_memory(
    api_client: TestClient, tokens: dict[str, str], user_id: str, session_id: str
) -> None:
    body = {"user_id": user_id, "agent_id": "planner", "items": [{"content": "A fact."}]}
    url = f"/v1/sessions/{session_id}/working"
    assert api_client.put(url, json=body, headers=bearer(tokens["viewer"])).status_code == 403
    assert api_client.put(url, json=body, headers=bearer(tokens["operator"])).status_code == 403
    assert api_client.put(url, json=body, headers=bearer(tokens["admin"])).status_code == 200
    # Viewers read at user level; agent tokens must say which agent they are.
    assert len(_get(api_client, tokens["viewer"], session_id, user_id=user_id)) == 1
    missing = api_client.get(url, params={"user_id": user_id}, headers=bearer(tokens["agent"]))
    assert missing.status_code == 422
    promote = api_client.post(
        f"/v1/sessions/{session_id}/promote",
        json={"user_id": user_id, "reason": "end"},
        headers=bearer(tokens["viewer"]),
    )
    assert promote.status_code == 403
    bad = api_client.put(
        url,
        json={**body, "items": [{"content": "x", "activation": -1}]},
        headers=bearer(tokens["admin"]),
    )
    assert bad.status_code == 422


def _promote(
    client: TestClient, token: str, user_id: str, session_id: str, reason: str
) -> dict[str, object]:
    response = client.post(
        f"/v1/sessions/{session_id}/promote",
        json={"user_id": user_id, "agent_id": "planner", "reason": reason},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_compaction_promotes_active_items_into_long_term_memory(
    api_client: TestClient,
    celery_worker: str,
    tokens: dict[str, str],
    user_id: str,
    session_id: str,
) -> None:
    agent = tokens["agent"]
    _put(
        api_client,
        agent,
        user_id,
        session_id,
        [
            {
                "content": "The user's staging database runs on host db-stage-7.",
                "activation": 0.9,
                "role": "user",
                "speaker": "Dana",
            },
            {"content": "Maybe check the weather later.", "activation": 0.1},
        ],
    )
    result = _promote(api_client, agent, user_id, session_id, "compaction")
    assert result["promoted"] == 1 and result["remaining"] == 1
    [episode_id] = result["episode_ids"]
    assert [
        i["content"]
        for i in _get(api_client, agent, session_id, user_id=user_id, agent_id="planner")
    ] == ["Maybe check the weather later."]
    wait_for_episodes([episode_id])
    with session_scope() as session:
        episode = session.get(Episode, uuid.UUID(episode_id))
        assert episode is not None and episode.source == "promotion"
        assert episode.session_id == session_id and episode.agent_id == "planner"
        assert episode.metadata_["working_memory"]["reason"] == "compaction"
        note = session.scalar(
            select(Note)
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id == episode.id, Note.status == "active")
        )
        assert note is not None and "db-stage-7" in note.content

    # Promoting the same content again is idempotent: the same episode, nothing new.
    _put(
        api_client,
        agent,
        user_id,
        session_id,
        [
            {
                "content": "The user's staging database runs on host db-stage-7.",
                "activation": 0.9,
                "role": "user",
                "speaker": "Dana",
            },
        ],
    )
    again = _promote(api_client, agent, user_id, session_id, "compaction")
    assert again["episode_ids"] == [episode_id]
    with session_scope() as session:
        count = len(list(session.scalars(select(Episode.id).where(Episode.user_id == user_id))))
    assert count == 1


def test_reset_and_end_promote_everything(
    api_client: TestClient, tokens: dict[str, str], user_id: str, session_id: str
) -> None:
    agent = tokens["agent"]
    _put(
        api_client,
        agent,
        user_id,
        session_id,
        [
            {"content": "Low activation item one.", "activation": 0.01},
            {"content": "Low activation item two.", "activation": 0.02},
        ],
    )
    result = _promote(api_client, agent, user_id, session_id, "reset")
    assert result["promoted"] == 2 and result["remaining"] == 0
    assert len(set(result["episode_ids"])) == 2
    assert _get(api_client, agent, session_id, user_id=user_id, agent_id="planner") == []
    assert _promote(api_client, agent, user_id, session_id, "end")["promoted"] == 0
    invalid = api_client.post(
        f"/v1/sessions/{session_id}/promote",
        json={"user_id": user_id, "agent_id": "planner", "reason": "later"},
        headers=bearer(agent),
    )
    assert invalid.status_code == 422


def test_capacity_evicts_lowest_activation(database_url: str, redis_url: str) -> None:
    scope = {"tenant_id": "t-wm", "user_id": f"u-{uuid.uuid4().hex[:8]}", "session_id": "s"}
    settings = WorkingSettings(max_items=3, ttl_seconds=60)
    client = get_redis()
    items = [ItemInput(f"item {n}", activation=float(n)) for n in (5, 1, 3)]
    put_items(client=client, agent_id="a", items=items, settings=settings, **scope)
    result = put_items(
        client=client, agent_id="a", items=[ItemInput("item 9", 9.0)], settings=settings, **scope
    )
    assert result.evicted == 1
    assert [i.content for i in list_items(client=client, **scope)] == ["item 9", "item 5", "item 3"]
    assert 0 < client.ttl(session_key(**scope)) <= 60


def test_session_keys_escape_separators() -> None:
    assert session_key("t", "a:b", "c") != session_key("t", "a", "b:c")
    assert session_key("t", "a%3Ab", "c") != session_key("t", "a:b", "c")
