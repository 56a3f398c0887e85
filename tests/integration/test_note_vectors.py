"""note_vectors (migration 0004): the trigger-kept mirror of notes.embedding, hash-partitioned
by user, that every nearest-neighbour query searches.

The mirror follows inserts, vector changes, moves and deletes of notes (also when made as
`muma_app`), and nothing else; the dense route reads the viewer's partition only, applies
the access rules in SQL and ranks like an exact search; `muma_app` sees only its own rows.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.config import get_settings
from memory.db import scoped_session_for, session_scope
from memory.notes.models import Note
from memory.notes.similar import similar_notes
from memory.notes.vectors import VectorParam, vector_text
from memory.retrieval import routes as r
from memory.retrieval.service import search_notes
from memory.types import utcnow
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration

PARTITIONS = 64
# xmin shows whether the row was rewritten.
MIRROR = (
    "SELECT tableoid::regclass::text AS part, active, embedding::text AS v, xmin::text AS x"
    " FROM note_vectors WHERE note_id = :id"
)


def _vector(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=384)
    return list(v / np.linalg.norm(v))


def _note(tenant: str, user: str, vector: list[float] | None, **extra: Any) -> Note:
    return new_note(tenant, user, f"note {uuid.uuid4()}", embedding=vector, **extra)


def _mirror(note_id: uuid.UUID) -> Any:
    with session_scope() as session:
        return session.execute(text(MIRROR), {"id": note_id}).one_or_none()


def _partition_of(tenant: str, user: str) -> str:
    """The partition hash partitioning assigns (tenant, user) to."""
    with session_scope() as session:
        for i in range(PARTITIONS):
            found = session.execute(
                text(
                    "SELECT satisfies_hash_partition('note_vectors'::regclass, :m, :i, "
                    "CAST(:t AS varchar), CAST(:u AS varchar))"
                ),
                {"m": PARTITIONS, "i": i, "t": tenant, "u": user},
            ).scalar_one()
            if found:
                return f"note_vectors_p{i:02d}"
    raise AssertionError("no partition")


def test_mirror_follows_the_note(database_url: str, tenant_id: str, user_id: str) -> None:
    rng = np.random.default_rng(1)
    note = _note(tenant_id, user_id, _vector(rng))
    # Not `pending`: the embedding stage of other tests claims pending notes of any user.
    bare = _note(tenant_id, user_id, None, status="archived")
    with session_scope() as session:
        session.add_all([note, bare])
    first = _mirror(note.id)
    assert first is not None and first.part == _partition_of(tenant_id, user_id)
    assert first.active is True
    assert _mirror(bare.id) is None  # no vector, no row
    with session_scope() as session:  # neither other columns nor the same vector fire
        session.execute(
            text("UPDATE notes SET pinned = true, embedding = embedding WHERE id = :id"),
            {"id": note.id},
        )
    assert _mirror(note.id) == first
    changed = _vector(rng)
    with session_scope() as session:
        session.get(Note, note.id).embedding = changed  # type: ignore[union-attr]
        session.get(Note, bare.id).embedding = changed  # type: ignore[union-attr]
    assert _mirror(note.id).v != first.v
    assert _mirror(bare.id).v == _mirror(note.id).v and _mirror(bare.id).active is False
    other_user = f"u-{uuid.uuid4().hex[:10]}"
    with session_scope() as session:
        session.get(Note, note.id).user_id = other_user  # type: ignore[union-attr]
        session.get(Note, bare.id).embedding = None  # type: ignore[union-attr]
    assert _mirror(note.id).part == _partition_of(tenant_id, other_user)
    assert _mirror(bare.id) is None
    with session_scope() as session:
        session.execute(text("DELETE FROM notes WHERE id = :id"), {"id": note.id})
    assert _mirror(note.id) is None


def test_mirror_holds_only_searchable_notes(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """Pending, deleted and closed versions are never searched: they have no row."""
    rng = np.random.default_rng(5)
    note = _note(tenant_id, user_id, _vector(rng), status="deleted")
    with session_scope() as session:
        session.add(note)
    assert _mirror(note.id) is None
    with session_scope() as session:
        session.get(Note, note.id).status = "active"  # type: ignore[union-attr]
    assert _mirror(note.id).active is True
    with session_scope() as session:
        session.get(Note, note.id).status = "archived"  # type: ignore[union-attr]
    assert _mirror(note.id).active is False
    with session_scope() as session:
        session.get(Note, note.id).valid_to = utcnow()  # type: ignore[union-attr]
    assert _mirror(note.id) is None


def test_app_role_keeps_the_mirror_and_reads_only_its_rows(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    rng = np.random.default_rng(2)
    other = _note(tenant_id, f"u-{uuid.uuid4().hex[:10]}", _vector(rng))
    with session_scope() as session:
        session.add(other)
    own = _note(tenant_id, user_id, _vector(rng))
    with scoped_session_for(tenant_id, user_id) as session:
        session.add(own)  # the trigger writes note_vectors with the owner's rights
        session.flush()
        visible = set(session.execute(text("SELECT note_id FROM note_vectors")).scalars())
        assert visible == {own.id}
        named = text("SELECT count(*) FROM note_vectors WHERE note_id = :id")
        assert session.execute(named, {"id": other.id}).scalar_one() == 0
    assert _mirror(own.id) is not None
    partition = _partition_of(tenant_id, user_id)
    for statement in (
        f"SELECT count(*) FROM {partition}",
        "INSERT INTO note_vectors SELECT tenant_id, user_id, gen_random_uuid(), active,"
        " embedding FROM note_vectors",
        "DELETE FROM note_vectors",
    ):
        with (
            pytest.raises(ProgrammingError, match="permission denied"),
            scoped_session_for(tenant_id, user_id) as session,
        ):
            session.execute(text(statement))
    with scoped_session_for(tenant_id, user_id) as session:
        session.execute(text("DELETE FROM notes WHERE id = :id"), {"id": own.id})
    assert _mirror(own.id) is None


def _seed_two_users(tenant: str, a: str, b: str, n: int) -> tuple[np.ndarray, list[Note]]:
    """n notes of `a` (some not visible to agent `main`), and b's notes at a's vectors."""
    rng = np.random.default_rng(3)
    vectors = np.array([_vector(rng) for _ in range(n)])
    notes = [
        _note(
            tenant,
            a,
            list(v),
            visibility="user-only" if i % 7 == 0 else "open",
            status="archived" if i % 11 == 0 else "active",
        )
        for i, v in enumerate(vectors)
    ]
    with session_scope() as session:
        session.add_all(notes)
        session.add_all([_note(tenant, b, list(v)) for v in vectors])  # b's twins: closest
    return vectors, notes


def _with_last_plan(session: Session, call: Callable[[], Any]) -> tuple[Any, str]:
    """`call()`'s result and the plan of the last statement it sent."""
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        captured.append((statement, params))

    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", capture)
    try:
        result = call()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    statement, params = captured[-1]
    cursor = session.connection().connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    cursor.execute("EXPLAIN (COSTS OFF) " + statement, params)
    return result, "\n".join(row[0] for row in cursor.fetchall())


def test_dense_route_reads_one_partition_and_ranks_exactly(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    other_user = f"u-{uuid.uuid4().hex[:10]}"
    vectors, notes = _seed_two_users(tenant_id, user_id, other_user, 150)
    viewer = Viewer(tenant_id, user_id, "main")
    query = np.asarray(_vector(np.random.default_rng(4)))
    with session_scope() as session:
        found, plan = _with_last_plan(
            session,
            lambda: r.dense_route(session, r.ReadScope(viewer), vector_text(query), limit=20),
        )
    visible = [
        i for i, n in enumerate(notes) if n.visibility != "user-only" and n.status == "active"
    ]
    exact = sorted(visible, key=lambda i: -float(vectors[i] @ query))[:20]
    assert list(found) == [notes[i].id for i in exact]
    assert all(abs(found[notes[i].id] - float(vectors[i] @ query)) < 1e-5 for i in exact)
    scanned = set(re.findall(r" on (note_vectors_p\d+)", plan))
    assert scanned == {_partition_of(tenant_id, user_id)}, re.sub(r"'\[.*?\]'", "v", plan)


def test_dense_route_reads_the_query_vector_in_binary_as_in_text(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """The read path binds the query in binary (`VectorParam`); a caller may still pass the
    text form: both are the same float32 values, so the same notes at the same scores."""
    _, notes = _seed_two_users(tenant_id, user_id, f"u-{uuid.uuid4().hex[:10]}", 60)
    scope = r.ReadScope(Viewer(tenant_id, user_id, "main"))
    query = np.asarray(_vector(np.random.default_rng(5)), dtype=np.float32)
    with session_scope() as session:
        binary = r.dense_route(session, scope, VectorParam(query), limit=15)
        textual = r.dense_route(session, scope, vector_text(query), limit=15)
    assert len(binary) == 15 and set(binary) <= {n.id for n in notes}
    assert binary == textual  # the window cosines: test_note_window_vectors


def test_search_sends_its_query_vector_in_binary(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """Every statement of a search that takes the query vector gets pgvector's binary form,
    not the text form (0.2 ms of Python per formatting, commit 6ee6ab7)."""
    _seed_two_users(tenant_id, user_id, f"u-{uuid.uuid4().hex[:10]}", 30)
    sent: list[Any] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if isinstance(params, dict) and "query_vector" in params:
            sent.append(params["query_vector"])

    with session_scope() as session:
        engine = session.get_bind()
        event.listen(engine, "before_cursor_execute", capture)
        try:
            search_notes(
                session=session,
                viewer=Viewer(tenant_id, user_id, "main"),
                query="note",
                vector=np.asarray(_vector(np.random.default_rng(6))),
                top_k=5,
                settings=get_settings(),
            )
        finally:
            event.remove(engine, "before_cursor_execute", capture)
    # The dense route and the window cosines (its candidates', and the lexical ones').
    assert len(sent) >= 2 and all(isinstance(value, VectorParam) for value in sent)


def test_similar_notes_stay_within_the_user(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    other_user = f"u-{uuid.uuid4().hex[:10]}"
    vectors, notes = _seed_two_users(tenant_id, user_id, other_user, 40)
    active = [i for i, n in enumerate(notes) if n.status == "active"]
    with session_scope() as session:
        found = similar_notes(session, [notes[0].id, notes[1].id], limit=5)
    for q in (0, 1):
        expected = sorted(
            (i for i in active if i != q), key=lambda i: -float(vectors[i] @ vectors[q])
        )[:5]
        assert [c.note_id for c in found[notes[q].id]] == [notes[i].id for i in expected]


def test_similar_notes_plan_only_the_users_partition(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    other_user = f"u-{uuid.uuid4().hex[:10]}"
    _, notes = _seed_two_users(tenant_id, user_id, other_user, 60)
    with session_scope() as session:
        _, plan = _with_last_plan(session, lambda: similar_notes(session, [notes[0].id], limit=5))
    # Pruned before the run: set up per row instead, all 64 partitions' scans appeared.
    assert set(re.findall(r" on (note_vectors_p\d+)", plan)) == {_partition_of(tenant_id, user_id)}


def test_connections_search_hnsw_with_the_configured_candidate_list(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.config import reset_settings_cache
    from memory.db import dispose_engines, get_engine

    monkeypatch.setenv("MUMA_RETRIEVAL__HNSW_EF_SEARCH", "77")
    reset_settings_cache()
    dispose_engines()
    try:
        with get_engine().connect() as connection:
            assert connection.execute(text("SHOW hnsw.ef_search")).scalar() == "77"
            assert connection.execute(text("SHOW hnsw.iterative_scan")).scalar() == "relaxed_order"
    finally:
        monkeypatch.delenv("MUMA_RETRIEVAL__HNSW_EF_SEARCH")
        reset_settings_cache()
        dispose_engines()
