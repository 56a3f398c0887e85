"""Alembic: upgrade → downgrade → upgrade on a real PostgreSQL with pgvector."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import Connection, create_engine, inspect, text

from memory.ops.migrations import downgrade_database, upgrade_database
from tests.support.helpers import BARE_NOTE, UNIT_VECTOR, insert_bare_note

pytestmark = pytest.mark.integration

EXPECTED_TABLES = {
    "episodes",
    "notes",
    "note_sources",
    "links",
    "agents",
    "api_tokens",
    "conflicts",
    "transactive_index",
    "events",
    "dead_letters",
    "lexicon",
    "lexicon_totals",
    "tombstones",
    "note_vectors",
    "note_window_vectors",
    "note_terms",
    "note_contributions",
    "erasures",
    "journal_injections",
}


def _tables(url: str) -> set[str]:
    """Tables, partitioned parents included, but not their partitions."""
    engine = create_engine(url)
    try:
        names = set(inspect(engine).get_table_names()) - {"alembic_version"}
        with engine.connect() as conn:
            partitions = set(
                conn.execute(text("SELECT relname FROM pg_class WHERE relispartition")).scalars()
            )
        return names - partitions
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(scratch_database: str) -> None:
    upgrade_database("head", url=scratch_database)
    assert _tables(scratch_database) == EXPECTED_TABLES
    downgrade_database("base", url=scratch_database)
    assert _tables(scratch_database) == set()
    upgrade_database("head", url=scratch_database)
    assert _tables(scratch_database) == EXPECTED_TABLES

    engine = create_engine(scratch_database)
    with engine.connect() as conn:
        extensions = set(conn.execute(text("SELECT extname FROM pg_extension")).scalars())
        indexes = {
            row.indexname: row.indexdef
            for row in conn.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename='notes'")
            )
        }
    engine.dispose()
    fillfactor = _notes_options(scratch_database)
    assert {"vector", "pg_trgm"} <= extensions
    # Vectors are searched in note_vectors, one graph per partition (0004).
    assert "ix_notes_embedding_hnsw" not in indexes
    # Term indexes are keyed per user (0005); the global ones are gone, and the window
    # terms are indexed in the BM25 mirror note_terms only (0009).
    assert "ix_notes_index_terms" not in indexes
    assert "ix_notes_window_terms" not in indexes
    assert "ix_notes_user_window_terms" not in indexes
    assert (
        "note_user_lexemes(tenant_id, user_id, index_terms)"
        in (indexes["ix_notes_user_index_terms"])
    )
    assert "gin_trgm_ops" in indexes["ix_notes_content_trgm"]
    # Window vectors are scored per candidate, never searched through a graph (0003).
    assert "ix_notes_window_embedding_hnsw" not in indexes
    assert "fillfactor=80" in fillfactor
    assert _note_vector_partitions(scratch_database) == [("hnsw", "p")] * 64


def _note_vector_partitions(url: str) -> list[tuple[str, str]]:
    """(index access method, embedding storage) of each partition of note_vectors."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT am.amname, a.attstorage FROM pg_inherits i"
                    " JOIN pg_class c ON c.oid = i.inhrelid"
                    " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'embedding'"
                    " JOIN pg_index x ON x.indrelid = c.oid"
                    " JOIN pg_class ic ON ic.oid = x.indexrelid"
                    " JOIN pg_am am ON am.oid = ic.relam AND am.amname <> 'btree'"
                    " WHERE i.inhparent = 'note_vectors'::regclass ORDER BY c.relname"
                )
            )
            return [(str(row[0]), str(row[1])) for row in rows]
    finally:
        engine.dispose()


def _notes_options(url: str) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            options = conn.execute(
                text("SELECT reloptions FROM pg_class WHERE relname = 'notes'")
            ).scalar()
        return ",".join(options or [])
    finally:
        engine.dispose()


def test_constraints_reject_bad_rows(scratch_database: str) -> None:
    upgrade_database("head", url=scratch_database)
    engine = create_engine(scratch_database)
    with pytest.raises(Exception, match="ck_episodes_role"), engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO episodes (id, tenant_id, user_id, agent_id, session_id, role, content,"
                " occurred_at, metadata, options, source, status, attempts, created_at, updated_at)"
                " VALUES (gen_random_uuid(), 't', 'u', 'a', 's', 'robot', 'x', now(), '{}', '{}',"
                " 'capture', 'queued', 0, now(), now())"
            )
        )
    engine.dispose()


def test_0004_backfills_note_vectors_and_downgrades(scratch_database: str) -> None:
    upgrade_database("0003", url=scratch_database)
    engine = create_engine(scratch_database)
    ids = [uuid.uuid4() for _ in range(3)]
    try:
        with engine.begin() as conn:
            for i, note_id in enumerate(ids):
                conn.execute(
                    insert_bare_note(), {**BARE_NOTE, "id": note_id, "u": f"u{i}", "v": UNIT_VECTOR}
                )
        upgrade_database("head", url=scratch_database)
        with engine.connect() as conn:
            mirrored = set(conn.execute(text("SELECT note_id FROM note_vectors")).scalars())
        assert mirrored == set(ids)
        downgrade_database("0003", url=scratch_database)
        with engine.connect() as conn:
            restored = conn.execute(
                text("SELECT count(*) FROM pg_indexes WHERE indexname = 'ix_notes_embedding_hnsw'")
            ).scalar_one()
        assert restored == 1
    finally:
        engine.dispose()


def test_0006_fills_the_filter_columns_and_downgrades(scratch_database: str) -> None:
    upgrade_database("0005", url=scratch_database)
    engine = create_engine(scratch_database)
    insert = insert_bare_note()
    when = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    note = {**BARE_NOTE, "kind": "decision", "occurred_at": when, "v": UNIT_VECTOR}
    mirror = text("SELECT note_id, kind, domain, occurred_at::text FROM note_vectors")
    first, second = uuid.uuid4(), uuid.uuid4()
    try:
        with engine.begin() as conn:
            conn.execute(insert, {**note, "id": first, "domain": "health"})
        upgrade_database("head", url=scratch_database)
        with engine.connect() as conn:
            rows = [tuple(row) for row in conn.execute(mirror)]
        assert rows == [(first, "decision", "health", "2025-03-04 05:06:07+00")]
        downgrade_database("0005", url=scratch_database)
        with engine.begin() as conn:
            conn.execute(insert, {**note, "id": second, "domain": "work"})
            columns = set(
                conn.execute(
                    text(
                        "SELECT column_name FROM information_schema.columns"
                        " WHERE table_name = 'note_vectors'"
                    )
                ).scalars()
            )
            mirrored = set(conn.execute(text("SELECT note_id FROM note_vectors")).scalars())
        assert columns == {"tenant_id", "user_id", "note_id", "active", "embedding"}
        assert mirrored == {first, second}  # 0004's trigger again
    finally:
        engine.dispose()


def test_0007_indexes_every_partition_on_the_filter_columns(scratch_database: str) -> None:
    upgrade_database("head", url=scratch_database)
    engine = create_engine(scratch_database)
    per_partition = text(
        "SELECT count(*) FROM pg_indexes WHERE tablename LIKE 'note_vectors_p%'"
        " AND indexdef LIKE '%(tenant_id, user_id, ' || :column || ')%'"
    )
    partitions = text("SELECT count(*) FROM pg_inherits WHERE inhparent = 'note_vectors'::regclass")
    columns = ("kind", "domain", "occurred_at")

    def indexed(conn: Connection) -> dict[str, int]:
        return {c: conn.execute(per_partition, {"column": c}).scalar_one() for c in columns}

    try:
        with engine.connect() as conn:
            total = conn.execute(partitions).scalar_one()
            counts = indexed(conn)
        assert total == 64 and counts == dict.fromkeys(columns, total)
        downgrade_database("0006", url=scratch_database)
        with engine.connect() as conn:
            assert indexed(conn) == dict.fromkeys(columns, 0)
    finally:
        engine.dispose()


def test_0008_fills_the_window_mirror_and_downgrades(scratch_database: str) -> None:
    upgrade_database("0007", url=scratch_database)
    engine = create_engine(scratch_database)
    insert = insert_bare_note("window_embedding")
    searchable, deleted = uuid.uuid4(), uuid.uuid4()
    exists = text("SELECT to_regclass('note_window_vectors') IS NOT NULL")
    storage = text(
        "SELECT a.attstorage FROM pg_inherits i JOIN pg_attribute a"
        " ON a.attrelid = i.inhrelid AND a.attname = 'window_embedding'"
        " WHERE i.inhparent = 'note_window_vectors'::regclass"
    )
    try:
        with engine.begin() as conn:
            conn.execute(insert, {**BARE_NOTE, "id": searchable, "v": UNIT_VECTOR})
            conn.execute(
                insert, {**BARE_NOTE, "id": deleted, "status": "deleted", "v": UNIT_VECTOR}
            )
        upgrade_database("0008", url=scratch_database)
        with engine.connect() as conn:
            mirrored = set(conn.execute(text("SELECT note_id FROM note_window_vectors")).scalars())
            stored = list(conn.execute(storage).scalars())
        assert mirrored == {searchable}  # a deleted note is never scored
        assert stored == ["p"] * 64  # inline in every partition
        downgrade_database("0007", url=scratch_database)
        with engine.begin() as conn:
            assert conn.execute(exists).scalar_one() is False
            conn.execute(
                insert, {**BARE_NOTE, "id": uuid.uuid4(), "v": UNIT_VECTOR}
            )  # no trigger left
    finally:
        engine.dispose()


def test_0009_fills_the_terms_mirror_and_downgrades(scratch_database: str) -> None:
    upgrade_database("0008", url=scratch_database)
    engine = create_engine(scratch_database)
    insert = insert_bare_note()
    searchable, archived, deleted = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    exists = text("SELECT to_regclass('note_terms') IS NOT NULL")
    indexed = text(
        "SELECT count(*) FROM pg_inherits i JOIN pg_index x ON x.indrelid = i.inhrelid"
        " JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam"
        " WHERE i.inhparent = 'note_terms'::regclass AND a.amname = 'gin'"
    )
    try:
        with engine.begin() as conn:
            for note_id, status in ((searchable, "active"), (archived, "archived")):
                conn.execute(insert, {**BARE_NOTE, "id": note_id, "status": status, "v": None})
            conn.execute(insert, {**BARE_NOTE, "id": deleted, "status": "deleted", "v": None})
        upgrade_database("0009", url=scratch_database)
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT note_id, status, domain FROM note_terms")).all()
            gin = conn.execute(indexed).scalar_one()
        # Archived notes are searched when asked for; a deleted one never is.
        assert {(r.note_id, r.status, r.domain) for r in rows} == {
            (searchable, "active", "general"),
            (archived, "archived", "general"),
        }
        assert gin == 2 * 64  # both per-user term indexes in every partition
        downgrade_database("0008", url=scratch_database)
        with engine.begin() as conn:
            assert conn.execute(exists).scalar_one() is False
            restored = text("SELECT to_regclass('ix_notes_user_window_terms') IS NOT NULL")
            assert conn.execute(restored).scalar_one() is True
            conn.execute(insert, {**BARE_NOTE, "id": uuid.uuid4(), "v": None})  # no trigger left
    finally:
        engine.dispose()


def test_0010_copies_expiry_into_the_vector_mirror_and_downgrades(scratch_database: str) -> None:
    upgrade_database("0009", url=scratch_database)
    engine = create_engine(scratch_database)
    insert = insert_bare_note()
    expiring, lasting = uuid.uuid4(), uuid.uuid4()
    expiry = datetime(2025, 1, 8, tzinfo=UTC)
    mirrored = text("SELECT note_id, expires_at FROM note_vectors")
    column = text(
        "SELECT count(*) FROM information_schema.columns"
        " WHERE table_name = 'note_vectors' AND column_name = 'expires_at'"
    )
    try:
        with engine.begin() as conn:
            for note_id in (expiring, lasting):
                conn.execute(insert, {**BARE_NOTE, "id": note_id, "v": UNIT_VECTOR})
            conn.execute(
                text("UPDATE notes SET expires_at = :e WHERE id = :id"),
                {"e": expiry, "id": expiring},
            )
        upgrade_database("0010", url=scratch_database)
        with engine.begin() as conn:
            assert dict(conn.execute(mirrored).tuples().all()) == {expiring: expiry, lasting: None}
            conn.execute(
                text("UPDATE notes SET expires_at = :e WHERE id = :id"),
                {"e": expiry, "id": lasting},
            )  # the trigger now follows it
            both = dict(conn.execute(mirrored).tuples().all())
            assert both == {expiring: expiry, lasting: expiry}
        downgrade_database("0009", url=scratch_database)
        with engine.begin() as conn:
            assert conn.execute(column).scalar_one() == 0
            conn.execute(
                text("UPDATE notes SET kind = 'decision' WHERE id = :id"), {"id": lasting}
            )  # 0006's trigger again: it copies the filter columns, and no expiry
            kinds = text("SELECT kind FROM note_vectors WHERE note_id = :id")
            assert conn.execute(kinds, {"id": lasting}).scalar_one() == "decision"
    finally:
        engine.dispose()


def test_0018_brings_timestamps_python_cannot_read_into_its_range(scratch_database: str) -> None:
    upgrade_database("0017", url=scratch_database)
    engine = create_engine(scratch_database)
    insert = text(
        "INSERT INTO episodes (id, tenant_id, user_id, agent_id, session_id, role, content,"
        " occurred_at, metadata, options, source, status, attempts, created_at, updated_at)"
        " VALUES (:id, 't', 'u', 'main', 's', 'user', 'x', CAST(:at AS timestamptz), '{}',"
        " '{}', 'capture', 'queued', 0, now(), now())"
    )
    late, early, fine = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    # What the API used to accept: "9999-12-31T23:59:59-14:00" is year 10000 in UTC.
    stored = {late: "9999-12-31T23:59:59-14:00", early: "0001-01-01T00:00:00+14:00"}
    read = text("SELECT id, occurred_at, processed_at FROM episodes")
    try:
        with engine.begin() as conn:
            for episode_id, at in {**stored, fine: "2025-01-01T00:00:00+00:00"}.items():
                conn.execute(insert, {"id": episode_id, "at": at})
        with engine.connect() as conn, pytest.raises(Exception, match="year"):
            conn.execute(read).all()  # unreadable: the reason for 0018
        upgrade_database("0018", url=scratch_database)
        with engine.connect() as conn:
            rows = {row.id: row for row in conn.execute(read)}
        assert rows[late].occurred_at == datetime(9999, 12, 30, tzinfo=UTC)
        assert rows[early].occurred_at == datetime(1, 1, 2, tzinfo=UTC)
        assert rows[fine].occurred_at == datetime(2025, 1, 1, tzinfo=UTC)
        assert all(row.processed_at is None for row in rows.values())  # NULL stays NULL
    finally:
        engine.dispose()
