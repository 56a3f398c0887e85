"""Property: a forgotten memory is gone. A secret told among other turns goes through every
pipeline stage (windows, links, evolution), a sleep cycle (consolidation, conflicts),
working memory and filesystem sync; after `DELETE /v1/memories/{id}`, no column of any
table of the database (found from PostgreSQL's catalog, so a table added later is
covered), no Redis key and no synced file holds the secret's words, and a search for them
finds nothing by them: what a search for words never written finds.

Real PostgreSQL, real worker, real ONNX embeddings, through the API.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.ops.models import AuditEvent
from tasks.sync import run_user_sync
from tests.conftest import make_token
from tests.support.helpers import bearer, wait_until, workers_idle

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NEIGHBOURS = (
    "I went to the gym after work and did a long run on the treadmill.",
    "My sister is visiting next weekend and we want to see the harbour.",
    "The gym near the office has a new climbing wall I want to try.",
    "We booked a table at the harbour restaurant for Saturday night.",
    "After the run I stretched for twenty minutes at the gym.",
    "My sister loves seafood, so the harbour restaurant is perfect.",
    "Later I want to try the climbing wall with my sister.",
)
SECRET = "My bank PIN is {pin} and my mother's maiden name is {name}."
TEXT_TYPES = ("text", "character varying", "jsonb", "tsvector", "ARRAY", "character")
LEXICAL = {"bm25", "bm25_window", "verbatim"}


def _word() -> str:
    return "zq" + uuid.uuid4().hex[:8].translate(str.maketrans("0123456789", "ghijklmnop"))


class Secret:
    """One user's session with a secret turn at `position`, written by `agent`."""

    def __init__(self, client: TestClient, position: int, visibility: str) -> None:
        self.client, self.tenant = client, f"t-{uuid.uuid4().hex[:10]}"
        self.user, self.session_id = f"u-{uuid.uuid4().hex[:8]}", "s1"
        self.agent = make_token("agent", self.tenant)
        self.admin = make_token("admin", self.tenant)
        self.words = (_word(), _word())
        self.text = SECRET.format(pin=self.words[0], name=self.words[1].capitalize())
        self.turns = [*NEIGHBOURS[:position], self.text, *NEIGHBOURS[position:]]
        self.visibility = visibility

    def write(self) -> str:
        """Capture the turns as one conversation, wait for the pipeline; the secret's id."""
        episodes = [
            {"user_id": self.user, "agent_id": "main", "session_id": self.session_id,
             "role": "user", "speaker": "Alice", "content": turn}
            for turn in self.turns
        ]  # fmt: skip
        response = self.client.post(
            "/v1/episodes", json={"episodes": episodes}, headers=bearer(self.agent)
        )
        assert response.status_code == 202, response.text
        wait_until(self._settled, timeout=120)
        wait_until(workers_idle, timeout=120)
        secret_id = self._secret_note()
        # A second version (its audit event holds old and new text) of the chosen audience.
        edit = {"content": f"{self.text} I must not forget it.", "visibility": self.visibility}
        patched = self.client.patch(
            f"/v1/memories/{secret_id}",
            json={"user_id": self.user, **edit},
            headers=bearer(self.admin),
        )
        assert patched.status_code == 200, patched.text
        put = self.client.put(
            f"/v1/sessions/{self.session_id}/working",
            json={"user_id": self.user, "agent_id": "main", "items": [{"content": self.text}]},
            headers=bearer(self.agent),
        )
        assert put.status_code == 200, put.text
        return secret_id

    def sleep_and_sync(self) -> None:
        response = self.client.post(
            "/v1/consolidate", json={"user_id": self.user}, headers=bearer(self.admin)
        )
        assert response.status_code == 202, response.text
        wait_until(self._slept, timeout=120)
        wait_until(workers_idle, timeout=120)
        run_user_sync(tenant_id=self.tenant, user_id=self.user)

    def search(self, query: str) -> list[dict[str, Any]]:
        response = self.client.post(
            "/v1/search",
            json={"user_id": self.user, "query": query, "top_k": 20},
            headers=bearer(self.admin),
        )
        assert response.status_code == 200, response.text
        return response.json()["results"]

    def _settled(self) -> bool:
        with session_scope() as session:
            query = (
                select(func.count()).select_from(Episode).where(Episode.tenant_id == self.tenant)
            )
            return session.scalar(query.where(Episode.status == "done")) == len(self.turns)

    def _slept(self) -> bool:
        with session_scope() as session:
            query = select(AuditEvent.id).where(
                AuditEvent.tenant_id == self.tenant, AuditEvent.action == "sleep.cycle"
            )
            return session.scalar(query.limit(1)) is not None

    def _secret_note(self) -> str:
        with session_scope() as session:
            note_id = session.scalar(
                select(Note.id)
                .join(NoteSource, NoteSource.note_id == Note.id)
                .join(Episode, Episode.id == NoteSource.episode_id)
                .where(Episode.tenant_id == self.tenant, Episode.content == self.text)
            )
        assert note_id is not None
        return str(note_id)


def _database_hits(words: tuple[str, ...]) -> list[str]:
    """'table.column' of every text-like column of every table that holds a word."""
    with session_scope() as session:
        columns = session.execute(
            text(
                "SELECT c.table_name, c.column_name FROM information_schema.columns c"
                " JOIN pg_class t ON t.relname = c.table_name AND NOT t.relispartition"
                " JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = c.table_schema"
                " WHERE c.table_schema = current_schema() AND c.data_type = ANY(:types)"
            ),
            {"types": list(TEXT_TYPES)},
        ).all()
        hits = []
        for table, column in columns:
            for word in words:
                found = session.execute(
                    text(f'SELECT 1 FROM "{table}" WHERE "{column}"::text ILIKE :w LIMIT 1'),
                    {"w": f"%{word}%"},
                ).first()
                if found:
                    hits.append(f"{table}.{column}: {word}")
    return hits


def _redis_hits(url: str, words: tuple[str, ...]) -> list[str]:
    client = redis.Redis.from_url(url)
    hits = []
    for key in client.scan_iter(count=500):
        kind = client.type(key).decode()
        if kind == "string":
            values = [client.get(key) or b""]
        elif kind == "hash":
            values = [*client.hgetall(key).keys(), *client.hgetall(key).values()]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind in ("set", "zset"):
            values = list(client.smembers(key) if kind == "set" else client.zrange(key, 0, -1))
        else:
            values = []
        blob = b" ".join([key, *values]).decode("utf-8", "replace").lower()
        hits += [f"{key!r}: {w}" for w in words if w in blob]
    return hits


def _file_hits(root: Path, words: tuple[str, ...]) -> list[str]:
    if not root.exists():
        return []
    return [
        f"{path}: {w}"
        for path in root.rglob("*")
        if path.is_file()
        for w in words
        if w in path.read_text(encoding="utf-8", errors="replace").lower()
    ]


@settings(
    max_examples=2,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    position=st.integers(1, len(NEIGHBOURS) - 1),
    visibility=st.sampled_from(("scoped", "open", "private")),
)
def test_a_forgotten_memory_leaves_nothing_behind(
    api_client: TestClient, celery_worker: str, redis_url: str, position: int, visibility: str
) -> None:
    world = Secret(api_client, position, visibility)
    secret_id = world.write()
    world.sleep_and_sync()
    words = world.words
    # Before: the secret reached the database, Redis, the synced files, other notes' windows.
    assert _database_hits(words) and _redis_hits(redis_url, words)
    assert _file_hits(get_settings().sync_dir, words)
    found = world.search(f"{words[0]} {words[1]}")
    assert any(LEXICAL & set(r["explanation"]["routes"]) for r in found)

    response = api_client.delete(
        f"/v1/memories/{secret_id}",
        params={"user_id": world.user, "reason": "asked to"},
        headers=bearer(world.admin),
    )
    assert response.status_code == 200, response.text
    assert response.json()["working_items"] == 1 and response.json()["files"] == 1

    assert _database_hits(words) == []
    assert _redis_hits(redis_url, words) == []
    assert _file_hits(get_settings().sync_dir, words) == []
    for query in (f"{words[0]} {words[1]}", f"{_word()} {_word()}"):
        for hit in world.search(query):
            assert not LEXICAL & set(hit["explanation"]["routes"]), (query, hit)
    # The neighbours are still there, found by their own words.
    assert any("harbour" in r["content"] for r in world.search("harbour restaurant"))
