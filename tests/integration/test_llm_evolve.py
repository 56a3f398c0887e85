"""LLM evolution of linked notes, in process against the real PostgreSQL and the real
`openai` client talking to a local fake model server."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.clients.llm import LlmClient
from memory.db import session_scope
from memory.links.evolution_llm import evolve_with_llm
from memory.notes.models import Note
from memory.types import utcnow
from tests.support.fake_openai import FakeOpenAI
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration


def test_evolution_shows_and_changes_only_current_versions(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """The llm queue can run after a later decision closed a neighbour: that version keeps
    its context, and the model is not shown it."""
    new = new_note(tenant_id, user_id, "Alice swims every morning.")
    current = new_note(tenant_id, user_id, "Alice joined a swimming club.", context="club")
    closed = new_note(
        tenant_id, user_id, "Alice swims in the lake.", context="lake", valid_to=utcnow()
    )
    closed.valid_from = utcnow() - timedelta(days=1)
    with session_scope() as session:
        session.add_all([new, current, closed])
    answer = {"notes": [{"index": i, "context": f"model {i}", "tags": ["swim"]} for i in (0, 1)]}
    with FakeOpenAI() as server, session_scope() as session:
        server.reply(json.dumps(answer))
        llm = LlmClient(base_url=server.base_url, api_key="sk-test", model="fake")
        changed = evolve_with_llm(
            session=session, linked={new.id: [current.id, closed.id]}, llm=llm
        )
        [request] = server.chat_requests
    listing = request["messages"][1]["content"].split("\nOLDER:\n", 1)[1]
    assert listing.splitlines() == [f"0. {current.content} | context: club | tags: "]
    assert changed == 1
    with session_scope() as session:
        assert session.get_one(Note, current.id).context == "model 0"
        assert session.get_one(Note, closed.id).context == "lake"
