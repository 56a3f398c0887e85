"""note_vectors carry kind, domain, occurred_at (migration 0006) and expires_at (0010): the
trigger keeps them equal to the note's, and a dense search rejects filtered-out and
expired entries in the mirror itself."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.config import get_settings
from memory.db import session_scope
from memory.notes.models import Note
from memory.notes.vectors import vector_text
from memory.retrieval import routes as r
from memory.retrieval.service import search_notes
from tests.integration.test_note_vectors import _vector, _with_last_plan
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration

SCAN_TUPLES = "SELECT current_setting('hnsw.max_scan_tuples', true)"
MIRROR = (
    "SELECT kind, domain, occurred_at, expires_at, xmin::text AS x"
    " FROM note_vectors WHERE note_id = :id"
)
START = datetime(2025, 1, 1, tzinfo=UTC)
DOMAINS = ("work", "health", "travel", "family", "money")


def _mirror(note_id: uuid.UUID) -> tuple:
    with session_scope() as session:
        return tuple(session.execute(text(MIRROR), {"id": note_id}).one())


def test_mirror_copies_and_follows_the_filter_columns(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    vector = _vector(np.random.default_rng(5))
    note = new_note(
        tenant_id, user_id, "x", embedding=vector, kind="decision", domain="work", occurred_at=START
    )
    with session_scope() as session:
        session.add(note)
    assert _mirror(note.id)[:4] == ("decision", "work", START, None)
    later = START + timedelta(days=3)
    with session_scope() as session:
        stored = session.get(Note, note.id)
        assert stored is not None
        stored.kind, stored.domain, stored.occurred_at = "preference", "health", later
    changed = _mirror(note.id)
    assert changed[:4] == ("preference", "health", later, None)
    with session_scope() as session:
        stored = session.get(Note, note.id)
        assert stored is not None
        stored.expires_at = later
    changed = _mirror(note.id)
    assert changed[:4] == ("preference", "health", later, later)
    with session_scope() as session:  # other columns do not rewrite the mirror
        session.execute(text("UPDATE notes SET pinned = true WHERE id = :id"), {"id": note.id})
    assert _mirror(note.id) == changed


def _seed_slices(
    tenant_id: str, user_id: str, rng: np.random.Generator
) -> tuple[list[Note], np.ndarray, r.ReadScope, list[int]]:
    """150 notes over kinds, domains and days; a scope filtering all three, and the
    indexes of the notes that pass it."""
    vectors = np.array([_vector(rng) for _ in range(150)])
    notes = [
        new_note(
            tenant_id,
            user_id,
            f"note {i}",
            embedding=list(v),
            domain=DOMAINS[i % len(DOMAINS)],
            kind="decision" if i % 3 == 0 else "episodic",
            occurred_at=START + timedelta(days=i),
        )
        for i, v in enumerate(vectors)
    ]
    with session_scope() as session:
        session.add_all(notes)
    since = START + timedelta(days=30)
    scope = r.ReadScope(
        Viewer(tenant_id, user_id, "main"),
        r.SearchFilters(kinds=("decision",), domains=("health", "money"), since=since),
    )
    passing = [
        i
        for i, n in enumerate(notes)
        if n.kind == "decision" and n.domain in ("health", "money") and n.occurred_at >= since
    ]
    return notes, vectors, scope, passing


def test_filtered_dense_route_rejects_entries_in_the_mirror_and_ranks_exactly(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    rng = np.random.default_rng(6)
    notes, vectors, scope, passing = _seed_slices(tenant_id, user_id, rng)
    query = np.asarray(_vector(rng))
    with session_scope() as session:
        found, plan = _with_last_plan(
            session, lambda: r.dense_route(session, scope, vector_text(query), limit=5)
        )
    exact = sorted(passing, key=lambda i: -float(vectors[i] @ query))[:5]
    assert list(found) == [notes[i].id for i in exact]
    # The filter sits on the partition's scan, not only above a join with notes.
    mirror_scan = re.search(r"on note_vectors_p\d+.*?(?=\n\s*->|\Z)", plan, re.S)
    assert mirror_scan is not None, plan
    assert all(column in mirror_scan.group(0) for column in ("kind", "domain", "occurred_at")), (
        re.sub(r"'\[.*?\]'", "v", plan)
    )


def test_a_kinds_filter_merges_one_pool_per_kind_in_distance_order(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """Each kind's nearest come from a branch of their own (its graph, when it has one);
    merged, they are the nearest of all the kinds asked for, each note once, whatever
    the order or repetition of the kinds."""
    rng = np.random.default_rng(11)
    kinds = ("decision", "preference", "episodic")
    vectors = np.array([_vector(rng) for _ in range(90)])
    notes = [
        new_note(tenant_id, user_id, f"n{i}", embedding=list(v), kind=kinds[i % 3])
        for i, v in enumerate(vectors)
    ]
    with session_scope() as session:
        session.add_all(notes)
    query = np.asarray(_vector(rng))
    wanted = [i for i in range(len(notes)) if kinds[i % 3] != "episodic"]
    exact = sorted(wanted, key=lambda i: -float(vectors[i] @ query))[:8]
    asked = ("preference", "decision", "preference")
    scope = r.ReadScope(Viewer(tenant_id, user_id, "main"), r.SearchFilters(kinds=asked))
    with session_scope() as session:
        found = r.dense_route(session, scope, vector_text(query), limit=8)
    assert list(found) == [notes[i].id for i in exact]


def test_notes_past_their_ttl_take_no_place_in_the_dense_pool(
    database_url: str, tenant_id: str, user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the decay sweep expires them, notes past their TTL are still `active`; the
    nearest of them must not fill the pool and push the route into its fallback."""
    rng = np.random.default_rng(9)
    query = np.asarray(_vector(rng))
    # The 30 nearest notes (close to the query) expired yesterday; 20 others never expire.
    near = [query + 0.05 * np.asarray(_vector(rng)) for _ in range(30)]
    far = [query + 0.6 * np.asarray(_vector(rng)) for _ in range(20)]
    vectors = [v / np.linalg.norm(v) for v in near + far]
    yesterday = datetime.now(UTC) - timedelta(days=1)
    notes = [
        new_note(
            tenant_id,
            user_id,
            f"n{i}",
            embedding=list(v),
            expires_at=yesterday if i < len(near) else None,
        )
        for i, v in enumerate(vectors)
    ]
    with session_scope() as session:
        session.add_all(notes)

    def no_fallback(shape: object, limit: int) -> SimpleNamespace:
        raise AssertionError("the pool came up short and the route fell back")

    monkeypatch.setattr(r, "_dense_statement", no_fallback)
    scope = r.ReadScope(Viewer(tenant_id, user_id, "main"))
    with session_scope() as session:
        found, plan = _with_last_plan(
            session, lambda: r.dense_route(session, scope, vector_text(query), limit=5)
        )
    fresh = sorted(range(len(near), len(notes)), key=lambda i: -float(vectors[i] @ query))
    assert list(found) == [notes[i].id for i in fresh[:5]]
    mirror_scan = re.search(r"on note_vectors_p\d+.*?(?=\n\s*->|\Z)", plan, re.S)
    assert mirror_scan is not None and "expires_at" in mirror_scan.group(0), plan


def test_a_filtered_search_whose_graph_scan_comes_up_short_ranks_its_slice_before_the_join(
    database_url: str, tenant_id: str, user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, vectors, scope, passing = _seed_slices(tenant_id, user_id, np.random.default_rng(7))
    query = np.asarray(_vector(np.random.default_rng(8)))
    # A graph scan that gave up far from the slice (a large partition) returns nothing.
    gave_up = SimpleNamespace(rows=lambda session, params: [])
    monkeypatch.setattr(r, "_dense_pool_statement", lambda shape, limit: gave_up)
    with session_scope() as session:
        found, plan = _with_last_plan(
            session, lambda: r.dense_route(session, scope, vector_text(query), limit=10)
        )
    exact = sorted(passing, key=lambda i: -float(vectors[i] @ query))[:10]
    assert list(found) == [notes[i].id for i in exact]
    # The slice's (id, distance) pairs are sorted before the join with notes (a bounded
    # sort of narrow pairs), and the graph is not asked again.
    lines = plan.splitlines()
    first_sort = next(i for i, line in enumerate(lines) if "Sort" in line)
    first_join = next(i for i, line in enumerate(lines) if re.search(r"Join|Nested Loop", line))
    assert first_join < first_sort, plan
    assert "embedding_idx" not in plan, plan


def test_a_small_slice_is_read_through_its_filter_index_and_ranked_exactly(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    rng = np.random.default_rng(9)
    vectors = np.array([_vector(rng) for _ in range(300)])
    notes = [
        new_note(
            tenant_id, user_id, f"n{i}", embedding=list(v), occurred_at=START + timedelta(days=i)
        )
        for i, v in enumerate(vectors)
    ]
    with session_scope() as session:
        session.add_all(notes)
        session.flush()
        session.execute(text("ANALYZE note_vectors"))
    since = START + timedelta(days=290)  # the last ten days: a thirtieth of the notes
    scope = r.ReadScope(Viewer(tenant_id, user_id, "main"), r.SearchFilters(since=since))
    query = np.asarray(_vector(rng))
    with session_scope() as session:
        found, plan = _with_last_plan(
            session, lambda: r.dense_route(session, scope, vector_text(query), limit=5)
        )
    exact = sorted(range(290, 300), key=lambda i: -float(vectors[i] @ query))[:5]
    assert list(found) == [notes[i].id for i in exact]
    assert "user_id_occurred_at_idx" in plan, plan  # the partition's copy of 0007's index


def _recording_pool(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The `hnsw.max_scan_tuples` each dense pool statement runs under, in order."""
    seen: list[str | None] = []
    product = r._dense_pool_statement

    def recording(shape: r.ScopeShape, limit: int) -> SimpleNamespace:
        statement = product(shape, limit)

        def rows(session: Session, params: dict[str, Any]) -> list[Any]:
            seen.append(session.execute(text(SCAN_TUPLES)).scalar())
            return statement.rows(session, params)

        return SimpleNamespace(rows=rows)

    monkeypatch.setattr(r, "_dense_pool_statement", recording)
    return seen


def test_a_filtered_graph_scan_is_capped_and_the_transaction_keeps_its_setting(
    database_url: str, tenant_id: str, user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, vectors, scope, passing = _seed_slices(tenant_id, user_id, np.random.default_rng(10))
    query = np.asarray(_vector(np.random.default_rng(11)))
    unfiltered = r.ReadScope(scope.viewer)
    seen = _recording_pool(monkeypatch)
    with session_scope() as session:
        session.execute(text("SET LOCAL hnsw.max_scan_tuples = 7777"))
        found = r.dense_route(session, scope, vector_text(query), limit=5, scan_tuples=321)
        after = session.execute(text(SCAN_TUPLES)).scalar()
        r.dense_route(session, unfiltered, vector_text(query), limit=5, scan_tuples=321)
        r.dense_route(session, scope, vector_text(query), limit=5)  # no cap given
    assert seen == ["321", "7777", "7777"]
    assert after == "7777"
    exact = sorted(passing, key=lambda i: -float(vectors[i] @ query))[:5]
    assert list(found) == [notes[i].id for i in exact]


def test_search_caps_a_filtered_graph_scan_at_the_configured_setting(
    database_url: str, tenant_id: str, user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, scope, _ = _seed_slices(tenant_id, user_id, np.random.default_rng(12))
    settings = get_settings().model_copy(deep=True)
    settings.retrieval.filtered_scan_tuples = 654
    vector = np.asarray(_vector(np.random.default_rng(13)))
    with session_scope() as session:  # pgvector's library loaded: its default is readable
        session.execute(text("SELECT '[1]'::vector"))
        default = session.execute(text(SCAN_TUPLES)).scalar()
    seen = _recording_pool(monkeypatch)
    for filters in (scope.filters, r.SearchFilters()):
        with session_scope() as session:
            search_notes(
                session=session,
                viewer=scope.viewer,
                query="note",
                vector=vector,
                top_k=5,
                settings=settings,
                filters=filters,
            )
    assert default is not None and default != "654"
    assert seen == ["654", default]
