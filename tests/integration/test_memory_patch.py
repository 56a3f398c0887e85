"""PATCH /v1/memories/{id}: in-place edits, content versions, roles and visibility rules."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from memory.db import session_scope
from memory.links.models import Link
from memory.notes.models import LexiconTerm, Note, NoteSource
from memory.ops.models import AuditEvent
from tests.conftest import make_token
from tests.integration.test_transactive import write
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration
AUTHOR = "assistant-1"


@pytest.fixture()
def agents(api_client: TestClient, tokens: dict[str, str]) -> None:
    admin = bearer(tokens["admin"])
    api_client.put("/v1/agents/finance-bot", json={"domains": ["finance"]}, headers=admin)
    api_client.put("/v1/agents/health-bot", json={"domains": ["health"]}, headers=admin)


@pytest.fixture()
def budget(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str, agents: None
) -> str:
    return write(
        api_client,
        tokens["agent"],
        user_id,
        AUTHOR,
        "Dana's grocery budget is 300 euros a month.",
        domain="finance",
        visibility="scoped",
        kind="episodic",
        tags=["groceries"],
    )


def patch(
    client: TestClient, token: str, note_id: str, **body: object
) -> tuple[int, dict[str, object]]:
    response = client.patch(f"/v1/memories/{note_id}", json=body, headers=bearer(token))
    return response.status_code, response.json()


def test_author_edits_attributes_in_place_with_audit(
    api_client: TestClient, tokens: dict[str, str], user_id: str, budget: str
) -> None:
    with session_scope() as session:
        before = session.get(Note, uuid.UUID(budget))
        assert before is not None
        half_life = before.half_life_hours
    status, body = patch(
        api_client, tokens["agent"], budget, user_id=user_id, agent_id=AUTHOR,
        tags=["groceries", "budget", "budget"], pinned=True, kind="decision",
        visibility="private",
    )  # fmt: skip
    assert status == 200, body
    assert body["id"] == budget and body["version"] == 1
    assert body["tags"] == ["groceries", "budget"] and body["pinned"] is True
    assert body["kind"] == "decision" and body["visibility"] == "private"
    assert body["half_life_hours"] == pytest.approx(half_life * 2.0)  # episodic x1 -> decision x2
    with session_scope() as session:
        event = session.scalar(
            select(AuditEvent).where(
                AuditEvent.entity_id == budget, AuditEvent.action == "note.edited"
            )
        )
        assert event is not None and event.user_id == user_id
        changes = event.data["changes"]
    assert changes["pinned"] == {"old": False, "new": True}
    assert changes["visibility"] == {"old": "scoped", "new": "private"}
    assert changes["tags"]["new"] == ["groceries", "budget"]
    # Nothing to change is an error; a no-op change is answered without an audit record.
    assert patch(api_client, tokens["admin"], budget, user_id=user_id)[0] == 422
    assert patch(api_client, tokens["admin"], budget, user_id=user_id, pinned=True)[0] == 200
    assert patch(api_client, tokens["admin"], budget, user_id=user_id, kind="nonsense")[0] == 422


def test_who_may_edit(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str, user_id: str, budget: str
) -> None:
    agent = tokens["agent"]
    # An agent of another domain cannot see the scoped finance note: it does not exist for it.
    assert patch(api_client, agent, budget, user_id=user_id, agent_id="health-bot",
                 tags=["x"])[0] == 404  # fmt: skip
    # An agent that sees it may retag it, but not change who can see it.
    assert patch(api_client, agent, budget, user_id=user_id, agent_id="finance-bot",
                 tags=["food"])[0] == 200  # fmt: skip
    for change in ({"visibility": "open"}, {"domain": "general"}):
        status, body = patch(
            api_client, agent, budget, user_id=user_id, agent_id="finance-bot", **change
        )
        assert status == 403, body
    # Viewers read, never edit; tokens bound to another user are refused.
    assert patch(api_client, tokens["viewer"], budget, user_id=user_id, pinned=True)[0] == 403
    other = make_token("agent", tenant_id, "someone-else")
    assert patch(api_client, other, budget, user_id=user_id, agent_id=AUTHOR,
                 pinned=True)[0] == 403  # fmt: skip
    # Another tenant's admin does not find it.
    foreign = make_token("admin", f"t-{uuid.uuid4().hex[:8]}")
    assert patch(api_client, foreign, budget, user_id=user_id, pinned=True)[0] == 404
    # user-only: no agent sees it any more, the user (operator at user level) still does.
    assert patch(api_client, agent, budget, user_id=user_id, agent_id=AUTHOR,
                 visibility="user-only")[0] == 200  # fmt: skip
    assert patch(api_client, agent, budget, user_id=user_id, agent_id=AUTHOR,
                 pinned=True)[0] == 404  # fmt: skip
    status, body = patch(api_client, tokens["operator"], budget, user_id=user_id, pinned=True)
    assert status == 200 and body["pinned"] is True


def test_content_change_writes_a_new_version(
    api_client: TestClient, tokens: dict[str, str], user_id: str, budget: str
) -> None:
    new_text = "Dana's grocery budget is 400 euros a month."
    with session_scope() as session:
        old = session.get(Note, uuid.UUID(budget))
        assert old is not None and old.sparse_embedding is not None
        old_sparse = old.sparse_embedding.to_text()
    status, body = patch(
        api_client, tokens["agent"], budget, user_id=user_id, agent_id="finance-bot",
        content=new_text, tags=["groceries", "budget"],
    )  # fmt: skip
    assert status == 200, body
    new_id = str(body["id"])
    assert new_id != budget and body["version"] == 2 and body["content"] == new_text
    assert body["agent_id"] == AUTHOR  # the author stays; the editor is in the audit log
    assert body["tags"] == ["groceries", "budget"] and body["visibility"] == "scoped"
    params = {"user_id": user_id, "agent_id": AUTHOR}
    history = api_client.get(
        f"/v1/memories/{new_id}/history", params=params, headers=bearer(tokens["agent"])
    ).json()
    assert [(h["id"], h["version"]) for h in history] == [(budget, 1), (new_id, 2)]
    assert history[0]["valid_to"] is not None and history[0]["superseded_by"] == new_id
    assert "budget" not in history[0]["tags"] and "300" in history[0]["content"]
    assert [s["episode_id"] for s in history[1]["sources"]] == [
        s["episode_id"] for s in history[0]["sources"]
    ]
    with session_scope() as session:
        new = session.get(Note, uuid.UUID(new_id))
        assert new is not None and new.status == "active" and new.valid_to is None
        assert new.embedding is not None and new.window_embedding is not None
        assert new.sparse_embedding is not None  # the new text's, not the old version's
        assert new.sparse_embedding.to_text() != old_sparse
        assert new.embedding_model and new.lineage_id == uuid.UUID(budget)
        assert new.index_text and "400" in new.index_text and "Dana" in new.index_text
        matches = session.scalar(
            select(Note.index_terms.op("@@")(text("'400'::tsquery"))).where(Note.id == new.id)
        )
        assert matches
        relations = set(
            session.scalars(select(NoteSource.relation).where(NoteSource.note_id == new.id))
        )
        assert relations == {"revised"}
        link = session.scalar(
            select(Link).where(Link.source_id == new.id, Link.target_id == uuid.UUID(budget))
        )
        assert link is not None and link.kind == "supersedes" and link.created_by == "agent"
        terms = dict(
            session.execute(
                select(LexiconTerm.term, LexiconTerm.doc_count).where(
                    LexiconTerm.user_id == user_id,
                    LexiconTerm.field == "own",
                    LexiconTerm.term.in_(["300", "400"]),
                )
            ).all()
        )
        assert terms == {"400": 1}  # "300" is no current note's: it left the lexicon
        event = session.scalar(
            select(AuditEvent).where(
                AuditEvent.entity_id == new_id, AuditEvent.action == "note.updated"
            )
        )
        assert event is not None
        assert event.data["changes"]["content"]["old"].endswith("300 euros a month.")
        assert event.data["previous"] == budget
    # The closed version cannot be edited any more.
    status, body = patch(api_client, tokens["admin"], budget, user_id=user_id, content="x y z")
    assert status == 409 and body["superseded_by"] == new_id


def test_concurrent_revisions_close_a_version_once(
    api_client: TestClient, tokens: dict[str, str], user_id: str, budget: str
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def revise(amount: int) -> int:
        content = f"Dana's grocery budget is {amount} euros a month."
        return patch(api_client, tokens["admin"], budget, user_id=user_id, content=content)[0]

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(revise, (410, 420, 430, 440)))
    assert statuses == [200, 409, 409, 409]
    with session_scope() as session:
        lineage = list(session.scalars(select(Note).where(Note.lineage_id == uuid.UUID(budget))))
    assert sorted(n.version for n in lineage) == [1, 2]
    assert sum(n.valid_to is None for n in lineage) == 1
