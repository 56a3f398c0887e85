"""Learned sparse vectors end to end, with the real SPLADE-tiny files `make install` puts
in place: the worker stores each note's vector, the candidates' statement reads the
query's inner products (a seed's window with its adjacent turns'), a search adds them as
a channel and explains it, and the backfill gives notes without one theirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from memory.access.policy import Viewer
from memory.cli.main import cli
from memory.clients.embedder import embed_query
from memory.clients.sparse_encoder import SparseEncoder, SparseVector, get_sparse_encoder
from memory.clients.sparse_encoder import sparse_text as as_text
from memory.config import get_settings, load_settings
from memory.db import session_scope
from memory.notes.embed import sparse_source
from memory.notes.models import Note
from memory.notes.sparse_fill import count_missing_sparse, fill_sparse_vectors
from memory.retrieval.candidates import SearchOptions
from memory.retrieval.rows import load_candidates
from memory.retrieval.scope import ReadScope, SearchFilters
from memory.retrieval.service import search_notes
from memory.types import EMBEDDING_DIMENSION, utcnow
from tests.support.helpers import bearer, new_note, wait_for_episodes, wait_until

pytestmark = pytest.mark.integration

TURNS = [
    "I started taking karate classes last month.",
    "My sensei says I should get my yellow belt soon.",
    "We had pizza after the session.",
    "Jon bought a new bike for the triathlon.",
    "The weather was terrible all week.",
]
QUESTION = "What martial arts does Alice practise?"


@pytest.fixture(scope="module")
def encoder() -> SparseEncoder:
    found = get_sparse_encoder(get_settings())
    assert found is not None, "make install puts SPLADE-tiny's files in the environment"
    return found


@pytest.fixture(scope="module")
def sparse_user(
    api_client: TestClient, celery_worker: str
) -> Iterator[tuple[str, str, dict[str, str]]]:
    from tests.conftest import make_token

    tenant, user = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    headers = bearer(make_token("agent", tenant))
    episodes = [
        {"user_id": user, "agent_id": "main", "session_id": "s1", "role": "user"}
        | {"speaker": "Alice", "content": content}
        for content in TURNS
    ]
    response = api_client.post("/v1/episodes", json={"episodes": episodes}, headers=headers)
    assert response.status_code == 202, response.text
    wait_for_episodes(response.json()["episode_ids"], timeout=180)
    yield tenant, user, headers


def _dot(a: SparseVector, b: SparseVector) -> float:
    return sum(weight * b.get(term, 0.0) for term, weight in a.items())


def _stored(tenant: str, user: str) -> list[tuple[uuid.UUID, str, SparseVector]]:
    """The user's active notes in turn order: id, encoded text, stored sparse vector."""
    with session_scope() as session:
        rows = session.execute(
            select(Note.id, Note.speaker, Note.content, Note.sparse_embedding)
            .where(Note.tenant_id == tenant, Note.user_id == user, Note.status == "active")
            .order_by(Note.turn_seq)
        ).all()
    return [
        (
            r.id,
            sparse_source(r.speaker, r.content),
            dict(zip(*_coo(r.sparse_embedding), strict=True)),
        )
        for r in rows
    ]


def _coo(vector: object) -> tuple[list[int], list[float]]:
    assert vector is not None, "every note the worker embedded has a sparse vector"
    return vector.indices(), vector.values()  # type: ignore[attr-defined]


def test_the_worker_stores_each_notes_sparse_vector(
    sparse_user: tuple, encoder: SparseEncoder
) -> None:
    tenant, user, _ = sparse_user
    stored = _stored(tenant, user)
    assert len(stored) == len(TURNS)
    for _, encoded, vector in stored:
        assert encoded.startswith("Alice: ") and "(" not in encoded  # no date appended
        expected = encoder.encode(encoded)
        assert vector.keys() == expected.keys()
        for term, weight in expected.items():
            assert vector[term] == pytest.approx(weight, rel=1e-5)


def test_candidates_carry_the_querys_inner_products_and_seeds_their_window(
    sparse_user: tuple, encoder: SparseEncoder
) -> None:
    tenant, user, _ = sparse_user
    stored = _stored(tenant, user)
    ids = [note_id for note_id, _, _ in stored]
    query = encoder.encode(QUESTION)
    scope = ReadScope(Viewer(tenant, user, "main"), SearchFilters())
    with session_scope() as session:
        rows, adjacent = load_candidates(
            session, scope, ids, ids[1:3], now=utcnow(), decay=0.5, sparse_query=as_text(query)
        )
    own = [_dot(query, vector) for _, _, vector in stored]
    assert own[0] == max(own) > 0  # karate: a martial art, though no word is shared
    for index, note_id in enumerate(ids):
        assert rows[note_id].sparse_own == pytest.approx(own[index], rel=1e-4)
    assert adjacent[ids[1]] == [ids[0], ids[2]]
    # Seeds' windows add their adjacent turns'; any other note's is its own.
    assert rows[ids[1]].sparse_window == pytest.approx(own[0] + own[1] + own[2], rel=1e-4)
    assert rows[ids[2]].sparse_window == pytest.approx(own[1] + own[2] + own[3], rel=1e-4)
    assert rows[ids[4]].sparse_window == pytest.approx(own[4], rel=1e-4)
    with session_scope() as session:
        plain, _ = load_candidates(session, scope, ids, ids[1:3], now=utcnow(), decay=0.5)
    assert all(row.sparse_own is None and row.sparse_window is None for row in plain.values())


def test_a_search_adds_the_channel_explains_it_and_answers_through_the_api(
    sparse_user: tuple, api_client: TestClient
) -> None:
    tenant, user, headers = sparse_user
    settings = get_settings()
    now = utcnow()  # one clock: base levels of notes seconds old move between two reads

    def search(weight: float) -> dict[uuid.UUID, tuple[float, float]]:
        with session_scope() as session:
            hits = search_notes(
                session=session,
                viewer=Viewer(tenant, user, "main"),
                query=QUESTION,
                vector=embed_query(QUESTION, settings),
                top_k=len(TURNS),
                settings=settings,
                options=SearchOptions(mmr=False, sparse_weight=weight),
                sparse=as_text(get_sparse_encoder(settings).encode(QUESTION)),  # type: ignore[union-attr]
                now=now,
            )
        return {h.note.id: (h.score, h.explanation()["sparse"]) for h in hits}

    with_channel, without = search(0.3), search(0.0)
    assert with_channel.keys() == without.keys() and len(without) >= 3
    assert all(explained == 0.0 for _, explained in without.values())
    for note_id, (score, explained) in with_channel.items():
        assert score == pytest.approx(without[note_id][0] + explained, abs=1e-3)
    karate = _stored(tenant, user)[0][0]
    assert with_channel[karate][1] == max(explained for _, explained in with_channel.values())
    assert with_channel[karate][1] > 0
    body = {"user_id": user, "agent_id": "main", "query": QUESTION}
    response = api_client.post("/v1/search", json=body, headers=headers)
    assert response.status_code == 200, response.text
    explained = [r["explanation"]["sparse"] for r in response.json()["results"]]
    assert any(value != 0 for value in explained), explained


def _unfilled(tenant: str, user: str) -> dict[str, uuid.UUID]:
    """Notes with an embedding and no sparse vector: two searchable, one pending, one closed."""
    vector = [0.1] * EMBEDDING_DIMENSION
    notes = {
        "active": new_note(tenant, user, "I play chess on Sundays.", embedding=vector),
        "archived": new_note(tenant, user, "I used to swim.", embedding=vector, status="archived"),
        "pending": new_note(tenant, user, "Pending text.", embedding=vector, status="pending"),
        "closed": new_note(tenant, user, "Old version.", embedding=vector, valid_to=utcnow()),
    }
    with session_scope() as session:
        session.add_all(notes.values())
    return {name: note.id for name, note in notes.items()}


def test_the_backfill_fills_searchable_notes_once_in_batches(
    database_url: str, encoder: SparseEncoder
) -> None:
    tenant, user = f"t-{uuid.uuid4().hex[:8]}", "u-fill"
    ids = _unfilled(tenant, user)
    with session_scope() as session:
        assert count_missing_sparse(session=session, tenant_id=tenant) == 2
    after, filled = None, 0
    while True:
        with session_scope() as session:
            batch = fill_sparse_vectors(
                session=session, encoder=encoder, limit=1, after_id=after, tenant_id=tenant
            )
        if batch.last_id is None:
            break
        assert batch.filled == 1
        filled, after = filled + 1, batch.last_id
    assert filled == 2
    with session_scope() as session:
        assert count_missing_sparse(session=session, tenant_id=tenant) == 0
        vectors = dict(
            session.execute(
                select(Note.id, Note.sparse_embedding).where(Note.tenant_id == tenant)
            ).all()
        )
    chess = dict(zip(*_coo(vectors[ids["active"]]), strict=True))
    assert chess.keys() == encoder.encode("I play chess on Sundays.").keys()
    assert vectors[ids["archived"]] is not None
    assert vectors[ids["pending"]] is None and vectors[ids["closed"]] is None


def test_the_backfill_command_counts_then_fills(database_url: str) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    _unfilled(tenant, "u-cli")
    dry = CliRunner().invoke(cli, ["backfill-sparse", "--tenant", tenant, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "2 notes without a sparse vector" in dry.output
    run = CliRunner().invoke(cli, ["backfill-sparse", "--tenant", tenant])
    assert run.exit_code == 0, run.output
    assert "encoded 2 sparse vectors" in run.output
    with session_scope() as session:
        assert count_missing_sparse(session=session, tenant_id=tenant) == 0
        # A note whose vector was cleared is found again by the next run.
        session.execute(update(Note).where(Note.tenant_id == tenant).values(sparse_embedding=None))
    again = CliRunner().invoke(cli, ["backfill-sparse", "--tenant", tenant, "--dry-run"])
    assert "2 notes without a sparse vector" in again.output


def test_the_backfill_command_without_an_encoder_is_one_clear_line(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    _unfilled(tenant, "u-none")
    absent = load_settings(sparse={"model_dir": str(tmp_path / "absent")})
    monkeypatch.setattr("memory.cli.reembed.get_settings", lambda: absent)
    result = CliRunner().invoke(cli, ["backfill-sparse", "--tenant", tenant])
    assert result.exit_code == 2, result.output  # a configuration to fix
    assert "make install" in result.output and str(tmp_path / "absent") in result.output
    with session_scope() as session:
        assert count_missing_sparse(session=session, tenant_id=tenant) == 2  # untouched


def test_the_daily_task_fills_them_too(database_url: str, encoder: SparseEncoder) -> None:
    from tasks.maintenance import fill_sparse_vectors

    tenant = f"t-{uuid.uuid4().hex[:8]}"
    _unfilled(tenant, "u-task")

    def filled() -> bool:
        # Batches go in id order and other tests' notes may come first; a full batch
        # enqueues the next one, which the session's worker may be running meanwhile
        # (rows it holds are skipped here, not waited for).
        fill_sparse_vectors.apply().get()
        with session_scope() as session:
            return count_missing_sparse(session=session, tenant_id=tenant) == 0

    wait_until(filled, timeout=120, interval=0.2)
