"""Alembic: upgrade → downgrade → upgrade on a real PostgreSQL with pgvector."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import create_engine, inspect, text

from memory.db import sqlalchemy_url
from memory.ops.migrations import downgrade_database, upgrade_database

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
}


@pytest.fixture()
def scratch_database(database_url: str):  # type: ignore[no-untyped-def]
    name = f"scratch_{uuid.uuid4().hex[:8]}"
    admin = database_url.replace("/muma?", "/postgres?")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = sqlalchemy_url(database_url.replace("/muma?", f"/{name}?"))
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
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
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["ix_notes_embedding_hnsw"]
    assert "USING gin (index_terms)" in indexes["ix_notes_index_terms"]
    assert "gin_trgm_ops" in indexes["ix_notes_content_trgm"]
    # Window vectors are scored per candidate, never searched through a graph (0003).
    assert "ix_notes_window_embedding_hnsw" not in indexes
    assert "fillfactor=80" in fillfactor


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
