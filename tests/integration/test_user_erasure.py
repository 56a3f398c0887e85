"""Erasing a user leaves nothing of theirs anywhere and changes nothing of anyone else.

Alice and Bob write memories through the API and the pipeline (episodes, an explicit
memory, working memory, a search), get notes in conflict, a dead letter, bound tokens, a
sleep cycle (transactive index, events) and synced files. Bob's rows (every place of the
catalog, every column), keys and files are snapshot; Alice is erased through the API and a
real worker. Then every table of the database (walked in pg_catalog, partitions included,
every non-numeric column), every Redis key (Celery messages decoded) and every synced
file is searched for her marker word and her user id: only the erasure's own record names
her (its `user_id`; it holds counts, no content). Bob's snapshot is unchanged byte for
byte, and her token gets 401.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memory.clients.redis import get_redis
from memory.config import get_settings
from memory.consolidation.cycle import run_sleep_cycle
from memory.db import session_scope
from memory.retrieval.recent_users import RECENT_KEY
from memory.sync.files import user_directory
from memory.types import utcnow
from tasks.sync import run_user_sync
from tests.conftest import make_token
from tests.integration.test_user_erasure_support import (
    marker,
    redis_text,
    scan_database,
    scan_files,
    scan_redis,
    snapshot,
)
from tests.support.helpers import (
    bearer,
    seed_user,
    wait_for_episodes,
    wait_for_workers_idle,
    wait_until,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Person:
    user_id: str
    word: str
    session_id: str

    @property
    def strings(self) -> list[str]:
        return [self.word, self.user_id]


def _person(name: str) -> Person:
    return Person(f"{name}-{uuid.uuid4().hex[:8]}", marker(name[:2]), f"s-{name}")


def _write(client: TestClient, agent: str, person: Person) -> None:
    """Through the API: a conversation, an explicit memory, working memory, a search."""
    turns = [
        f"My cat {person.word} sleeps on the red sofa every afternoon.",
        f"{person.word} was adopted from the shelter in Lyon in 2019.",
        f"I bought a new scratching post for {person.word} yesterday.",
    ]
    episodes = [
        {"user_id": person.user_id, "agent_id": "main", "session_id": person.session_id,
         "role": "user", "content": turn} for turn in turns
    ]  # fmt: skip
    answer = client.post("/v1/episodes", json={"episodes": episodes}, headers=bearer(agent))
    assert answer.status_code == 202, answer.text
    memory = {"user_id": person.user_id, "agent_id": "main", "kind": "stable",
              "content": f"The vet of {person.word} is Dr. Moreau on Rue Verte."}  # fmt: skip
    written = client.post("/v1/memories?wait=30", json=memory, headers=bearer(agent))
    assert written.status_code == 201, written.text
    wait_for_episodes(answer.json()["episode_ids"])
    item = {"user_id": person.user_id, "agent_id": "main",
            "items": [{"content": f"{person.word} needs a vaccine next week"}]}  # fmt: skip
    put = client.put(f"/v1/sessions/{person.session_id}/working", json=item, headers=bearer(agent))
    assert put.status_code == 200, put.text
    query = {"user_id": person.user_id, "agent_id": "main", "query": f"{person.word} sofa"}
    assert client.post("/v1/search", json=query, headers=bearer(agent)).status_code == 200


def _maintain(tenant_id: str, person: Person) -> None:
    """A sleep cycle (transactive index, conflicts, events) and a filesystem sync."""
    with session_scope() as session:
        run_sleep_cycle(
            session=session,
            tenant_id=tenant_id,
            user_id=person.user_id,
            now=utcnow(),
            settings=get_settings(),
        )
    report = run_user_sync(tenant_id=tenant_id, user_id=person.user_id)
    assert report.written and not report.errors, report


def _outside(tenant_id: str, person: Person) -> dict[str, Any]:
    """The person's Redis keys (with values) and synced files (with their bytes)."""
    client = get_redis()
    keys = {k: redis_text(client, k) for k in client.scan_iter(match=f"muma:wm:{tenant_id}:*")}
    directory = user_directory(get_settings().sync_dir, person.user_id)
    return {
        "keys": {k: v for k, v in keys.items() if person.user_id in k},
        "member": client.zscore(RECENT_KEY, f"{tenant_id}\x00{person.user_id}"),
        "files": {
            str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*"))
            if p.is_file() and p.suffix != ".lock"
        },
    }


def test_erasing_a_user_leaves_nothing_of_theirs_and_nothing_else_changes(
    api_client: TestClient, celery_worker: str, tenant_id: str
) -> None:
    alice, bob = _person("alice"), _person("bob")
    agent, admin = make_token("agent", tenant_id), make_token("admin", tenant_id)
    for person in (alice, bob):
        _write(api_client, agent, person)
        seed_user(tenant_id, person.user_id, person.word)
    wait_for_workers_idle()
    for person in (alice, bob):
        _maintain(tenant_id, person)
    client = get_redis()
    wait_until(lambda: client.zscore(RECENT_KEY, f"{tenant_id}\x00{alice.user_id}") is not None)
    alice_token = make_token("viewer", tenant_id, alice.user_id)
    mine = {"user_id": alice.user_id}
    assert api_client.get("/v1/memories", params=mine, headers=bearer(alice_token)).is_success
    wait_for_workers_idle()

    before = scan_database(alice.strings)
    held = {table for table, _ in before}
    assert {"episodes", "notes", "lexicon", "dead_letters", "api_tokens", "events"} <= held
    assert any(t.startswith("note_terms_p") for t in held)
    assert scan_redis(client, alice.strings) and scan_files(get_settings().sync_dir, alice.strings)
    bob_rows, bob_outside = snapshot(tenant_id, bob.user_id), _outside(tenant_id, bob)
    assert bob_rows["notes"] and bob_outside["keys"] and bob_outside["files"]

    started = api_client.post(
        f"/v1/users/{alice.user_id}/erase",
        json={"reason": "asked to be forgotten"},
        headers=bearer(admin),
    )
    assert started.status_code == 202, started.text
    erasure_id = started.json()["erasure_id"]
    # Revoked with the erasure's start, before any row is gone.
    assert (
        api_client.get("/v1/memories", params=mine, headers=bearer(alice_token)).status_code == 401
    )

    def status() -> dict[str, Any]:
        answer = api_client.get(f"/v1/erasures/{erasure_id}", headers=bearer(admin))
        assert answer.status_code == 200, answer.text
        return answer.json()

    wait_until(lambda: status()["status"] == "done", timeout=120, interval=0.2)
    report = status()["report"]
    assert not any(report["remaining"].values()), report
    removed = report["removed"]
    assert removed["notes"] >= 7 and removed["episodes"] >= 5 and removed["dead_letters"] == 1
    assert removed["files"] >= 4 and removed["redis_keys"] >= 2 and removed["redis_members"] == 1
    assert report["tokens_revoked"] == 2  # the seeded viewer token and alice_token
    wait_for_workers_idle()

    left = scan_database(alice.strings)
    assert left == {("erasures", "user_id"): 1}, left  # the record that it ran
    assert scan_redis(client, alice.strings) == []
    assert scan_files(get_settings().sync_dir, alice.strings) == []
    assert snapshot(tenant_id, bob.user_id) == bob_rows
    assert _outside(tenant_id, bob) == bob_outside
    assert (
        api_client.get("/v1/memories", params=mine, headers=bearer(alice_token)).status_code == 401
    )
