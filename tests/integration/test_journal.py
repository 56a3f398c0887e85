"""The turn journal: what each captured turn became and why, what each context answer
injected with scores and why, for whoever may see the memories it names; its retention,
its CLI, and what forgetting a memory and erasing a user leave of it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from memory.cli.main import cli
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.journal.models import JournalInjection
from memory.journal.service import InjectedMemory, InjectionScope, record_injection
from memory.notes.models import Note, NoteSource
from memory.types import utcnow
from tests.conftest import make_token
from tests.support.helpers import bearer, new_note, wait_for_episodes

pytestmark = pytest.mark.integration

FACT = "Alice lives in Lisbon near the old tram line."
TOOL = "The build server zqbuildsrv listens on port 8443."
PRIVATE = "Alice keeps her spare house key under the blue flowerpot."
PROMPT = "Where does Alice live, and where is her spare house key?"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _turn(user: str, session: str, role: str, content: str, **extra: Any) -> dict[str, Any]:
    body = {"user_id": user, "agent_id": "main", "session_id": session, "role": role}
    return {**body, "content": content, **extra}


@dataclass(frozen=True)
class Scenario:
    tenant: str
    user: str
    session: str
    tokens: dict[str, str]
    episodes: dict[str, str]  # fact, chatter, duplicate, tool, private -> episode id
    fact_note: str
    private_note: str
    context: dict[str, Any]


@pytest.fixture(scope="module")
def scenario(api_client: TestClient, celery_worker: str) -> Scenario:
    """A session through the real pipeline: a fact, chatter, the fact again, a low-trust
    tool result and a private memory; then one context answer as agent `main`."""
    tenant, user, session = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("t", "u", "s"))
    tokens = {role: make_token(role, tenant) for role in ("agent", "viewer", "admin")}
    agent = bearer(tokens["agent"])
    episodes: dict[str, str] = {}

    def capture(*turns: tuple[str, dict[str, Any]]) -> None:
        sent = api_client.post(
            "/v1/episodes", json={"episodes": [t for _, t in turns]}, headers=agent
        )
        assert sent.status_code in (200, 202), sent.text
        ids = sent.json()["episode_ids"]
        episodes.update({name: i for (name, _), i in zip(turns, ids, strict=True)})
        wait_for_episodes(ids, timeout=120)

    capture(("fact", _turn(user, session, "user", FACT, speaker="Alice")))
    capture(
        ("chatter", _turn(user, session, "user", "thanks!", speaker="Alice")),
        ("duplicate", _turn(user, session, "user", FACT, speaker="Alice")),
        ("tool", _turn(user, session, "tool", TOOL, speaker="exec")),
    )
    body = {"user_id": user, "agent_id": "main", "session_id": session, "content": PRIVATE}
    written = api_client.post(
        "/v1/memories", json={**body, "visibility": "private"}, params={"wait": 30}, headers=agent
    )
    assert written.status_code == 201, written.text
    episodes["private"] = written.json()["episode_id"]
    [private_note] = written.json()["note_ids"]
    with session_scope() as db:
        fact = db.scalars(
            select(Note).where(Note.tenant_id == tenant, Note.user_id == user, Note.content == FACT)
        ).one()
        fact_note, domain = str(fact.id), fact.domain
    # `other` reads main's scoped notes of the fact's domain, not its private ones.
    admin = bearer(tokens["admin"])
    put = api_client.put("/v1/agents/other", json={"domains": [domain]}, headers=admin)
    assert put.status_code == 200, put.text
    asked = {"user_id": user, "agent_id": "main", "session_id": session, "prompt": PROMPT}
    context = api_client.post("/v1/context", json={**asked, "timeout_ms": 10000}, headers=agent)
    assert context.status_code == 200, context.text
    return Scenario(
        tenant, user, session, tokens, episodes, fact_note, str(private_note), context.json()
    )


def _journal(client: TestClient, token: str, **params: Any) -> dict[str, Any]:
    response = client.get("/v1/journal", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    # No turn text: the fact, and the tool result's own words (ids are random hex, so a
    # bare number such as the port could appear inside one).
    assert FACT not in response.text and "zqbuildsrv" not in response.text
    assert "flowerpot" not in response.text
    return response.json()


def _by_episode(journal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {turn["episode_id"]: turn for turn in journal["turns"]}


def test_each_turn_says_what_became_of_it_and_why(
    api_client: TestClient, scenario: Scenario
) -> None:
    s = scenario
    journal = _journal(
        api_client, s.tokens["viewer"], user_id=s.user, session_id=s.session, limit=10
    )
    turns = _by_episode(journal)
    assert set(turns) == set(s.episodes.values())
    assert [t["seq"] for t in journal["turns"]] == sorted(
        (t["seq"] for t in journal["turns"]), reverse=True
    )
    fact = turns[s.episodes["fact"]]
    assert fact["outcome"] == "stored" and fact["role"] == "user" and fact["origin"] == "user"
    assert [n["note_id"] for n in fact["notes"]] == [s.fact_note]
    assert "stored as a new memory" in fact["notes"][0]["why"]
    chatter = turns[s.episodes["chatter"]]
    assert chatter["outcome"] == "chatter" and chatter["notes"] == []
    assert chatter["decision"] == "NOOP" and "chatter" in chatter["why"]
    duplicate = turns[s.episodes["duplicate"]]
    assert duplicate["outcome"] == "merged"
    [merged] = duplicate["notes"]
    assert merged["target_id"] == s.fact_note == merged["note_id"]
    assert "near-duplicate" in merged["why"] and merged["similarity"] >= 0.95
    tool = turns[s.episodes["tool"]]
    assert tool["outcome"] == "candidate" and tool["origin"] == "tool"
    [candidate] = tool["notes"]
    assert candidate["candidate"] and candidate["trust"] == "low"
    assert "candidate" in candidate["why"] and "tool" in candidate["why"]
    assert "low trust" in candidate["why"]
    private = turns[s.episodes["private"]]
    assert private["outcome"] == "stored" and private["notes"][0]["note_id"] == s.private_note


def test_an_injection_lists_its_memories_with_scores_and_why(
    api_client: TestClient, scenario: Scenario
) -> None:
    s = scenario
    injected = [m["id"] for m in s.context["memories"]]
    assert s.fact_note in injected and s.private_note in injected, s.context
    journal = _journal(api_client, s.tokens["viewer"], user_id=s.user, session_id=s.session)
    [entry] = journal["injections"]
    assert entry["agent_id"] == "main" and entry["session_id"] == s.session
    assert [m["note_id"] for m in entry["memories"]] == injected
    assert [m["rank"] for m in entry["memories"]] == list(range(1, len(injected) + 1))
    for memory, shown in zip(entry["memories"], s.context["memories"], strict=True):
        assert (
            memory["score"] == shown["score"] and memory["routes"] == shown["explanation"]["routes"]
        )
        assert memory["routes"] and "found by" in memory["why"]
        assert memory["trust"] == shown["trust"] and memory["origin"] == shown["origin"]
    # A dry run (the dashboard's preview) is not an injection.
    dry = {"user_id": s.user, "agent_id": "main", "session_id": s.session, "prompt": PROMPT}
    api_client.post("/v1/context", json={**dry, "dry_run": True}, headers=bearer(s.tokens["agent"]))
    again = _journal(api_client, s.tokens["viewer"], user_id=s.user, session_id=s.session)
    assert len(again["injections"]) == 1


def test_an_agent_sees_no_memory_it_may_not_read(
    api_client: TestClient, scenario: Scenario
) -> None:
    s = scenario
    response = api_client.get(
        "/v1/journal",
        params={"user_id": s.user, "agent_id": "other", "session_id": s.session},
        headers=bearer(s.tokens["agent"]),
    )
    assert response.status_code == 200, response.text
    assert s.private_note not in response.text and s.episodes["private"] not in response.text
    journal = response.json()
    turns = _by_episode(journal)
    assert turns[s.episodes["fact"]]["notes"][0]["note_id"] == s.fact_note
    assert s.episodes["chatter"] not in turns  # another agent's turn naming nothing it reads
    [entry] = journal["injections"]
    assert [m["note_id"] for m in entry["memories"]] == [s.fact_note] and entry["hidden"]
    # `main` reads its private note; an agent token must name its agent.
    mine = _journal(
        api_client, s.tokens["agent"], user_id=s.user, agent_id="main", session_id=s.session
    )
    assert s.private_note in {m["note_id"] for m in mine["injections"][0]["memories"]}
    missing = api_client.get(
        "/v1/journal", params={"user_id": s.user}, headers=bearer(s.tokens["agent"])
    )
    assert missing.status_code == 422


def test_forgetting_a_memory_removes_it_from_the_journal(
    api_client: TestClient, scenario: Scenario
) -> None:
    s = scenario

    def named(note_id: str) -> int:
        with session_scope() as db:
            return db.scalar(
                select(func.count())
                .select_from(JournalInjection)
                .where(JournalInjection.note_id == uuid.UUID(note_id))
            )

    assert named(s.private_note) == 1 and named(s.fact_note) == 1
    forgotten = api_client.delete(
        f"/v1/memories/{s.private_note}",
        params={"user_id": s.user},
        headers=bearer(s.tokens["admin"]),
    )
    assert forgotten.status_code == 200, forgotten.text
    assert named(s.private_note) == 0 and named(s.fact_note) == 1


@pytest.fixture()
def quiet_user(database_url: str, tenant_id: str, user_id: str, session_id: str) -> dict[str, str]:
    """Turns written straight into the store (no pipeline): dropped, failed, in progress,
    and one whose only memory is user-only."""
    inputs = [
        EpisodeInput(user_id, "main", session_id, "tool", "zqdropped output", speaker="exec"),
        EpisodeInput(user_id, "main", session_id, "user", "zqfailed words"),
        EpisodeInput(user_id, "main", session_id, "user", "zqwaiting words"),
        EpisodeInput(user_id, "main", session_id, "user", "zqhidden words"),
    ]
    states = [
        {"status": "done", "decision": "DROP"},
        {"status": "failed", "error": "LlmOutputError: the model said zqsecret"},
        {"status": "processing"},
        {"status": "done", "decision": "ADD"},
    ]
    with session_scope() as db:
        captured = capture_episodes(session=db, tenant_id=tenant_id, episodes=inputs)
        ids = [episode_id for episode_id, _ in captured]
        for episode_id, values in zip(ids, states, strict=True):
            db.execute(update(Episode).where(Episode.id == episode_id).values(**values))
        note = new_note(tenant_id, user_id, "zqhidden fact", visibility="user-only")
        db.add(note)
        db.flush()
        db.add(NoteSource(note_id=note.id, episode_id=ids[3]))
    names = ("dropped", "failed", "waiting", "hidden")
    return {**{n: str(i) for n, i in zip(names, ids, strict=True)}, "note": str(note.id)}


def test_turns_without_memories_and_hidden_ones(
    api_client: TestClient,
    quiet_user: dict[str, str],
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
) -> None:
    response = api_client.get(
        "/v1/journal", params={"user_id": user_id}, headers=bearer(tokens["viewer"])
    )
    assert response.status_code == 200 and "zq" not in response.text  # no text, no message
    turns = _by_episode(response.json())
    dropped = turns[quiet_user["dropped"]]
    assert dropped["outcome"] == "dropped" and "low trust" in dropped["why"]
    failed = turns[quiet_user["failed"]]
    assert failed["outcome"] == "failed" and failed["error"] == "LlmOutputError"
    assert turns[quiet_user["waiting"]]["outcome"] == "waiting"
    assert turns[quiet_user["hidden"]]["notes"][0]["note_id"] == quiet_user["note"]
    as_main = api_client.get(
        "/v1/journal",
        params={"user_id": user_id, "agent_id": "main"},
        headers=bearer(tokens["agent"]),
    ).json()
    hidden = _by_episode(as_main)[quiet_user["hidden"]]
    assert hidden["hidden"] and hidden["notes"] == [] and hidden["outcome"] == "hidden"
    assert quiet_user["note"] not in json.dumps(as_main)
    as_other = api_client.get(
        "/v1/journal",
        params={"user_id": user_id, "agent_id": "other"},
        headers=bearer(tokens["agent"]),
    ).json()
    assert as_other["turns"] == []  # turns of another agent, naming nothing it reads
    bound = make_token("viewer", tenant_id, "someone-else")
    refused = api_client.get("/v1/journal", params={"user_id": user_id}, headers=bearer(bound))
    assert refused.status_code == 403


def _inject(
    tenant_id: str, user_id: str, at_days_ago: float, note_id: uuid.UUID, session: str = "s1"
) -> None:
    memory = InjectedMemory(note_id, 0.5, {"routes": {"dense": 1}}, "user", "high", False)
    with session_scope() as db:
        record_injection(
            session=db,
            scope=InjectionScope(tenant_id, user_id, "main", session),
            memories=[memory],
            at=utcnow() - timedelta(days=at_days_ago),
        )


def _rows(tenant_id: str, user_id: str) -> int:
    with session_scope() as db:
        return db.scalar(
            select(func.count())
            .select_from(JournalInjection)
            .where(JournalInjection.tenant_id == tenant_id, JournalInjection.user_id == user_id)
        )


def test_retention_prunes_old_injections_and_erasure_removes_the_rest(
    quiet_user: dict[str, str], redis_url: str, tenant_id: str, user_id: str
) -> None:
    from tasks.journal import prune_journal

    note_id = uuid.UUID(quiet_user["note"])
    _inject(tenant_id, user_id, 45, note_id)
    _inject(tenant_id, user_id, 1, note_id)
    assert _rows(tenant_id, user_id) == 2
    assert prune_journal.apply(throw=True).get() >= 1
    assert _rows(tenant_id, user_id) == 1
    erased = run("users", "erase", "--user", user_id, "--tenant", tenant_id, "--yes")
    assert erased.exit_code == 0, erased.output
    assert _rows(tenant_id, user_id) == 0


def test_cli_prints_turns_and_injections_and_refuses_an_unknown_user(
    quiet_user: dict[str, str], tenant_id: str, user_id: str, session_id: str
) -> None:
    _inject(tenant_id, user_id, 0, uuid.UUID(quiet_user["note"]), session_id)
    shown = run("journal", "--user", user_id, "--tenant", tenant_id, "--session", session_id)
    assert shown.exit_code == 0, shown.output
    for word in ("Turns", "dropped", "failed", "LlmOutputError", "waiting", "Injections"):
        assert word in shown.output, word
    assert "zqsecret" not in shown.output and quiet_user["note"][:8] in shown.output
    as_json = run("journal", "--user", user_id, "--tenant", tenant_id, "--json")
    data = json.loads(as_json.output)
    assert len(data["turns"]) == 4 and len(data["injections"]) == 1
    unknown = run("journal", "--user", "nobody-here", "--tenant", tenant_id)
    assert unknown.exit_code == 2 and "unknown user" in unknown.output
    assert run("journal", "--user", user_id, "--limit", "0").exit_code == 2
    assert "Example" in run("journal", "--help").output
