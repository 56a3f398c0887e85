"""Helpers of the erasure tests (no tests here): unique marker words, snapshots of a user's
rows from the catalog, scans of the whole database, Redis and the sync directory, and a
bulk seed of a user with thousands of rows."""

from __future__ import annotations

import base64
import contextlib
import json
import random
import uuid
from pathlib import Path
from typing import Any

import redis
from sqlalchemy import text

from memory.db import session_scope
from memory.erasure.catalog import PLACES
from memory.erasure.passes import census
from memory.erasure.plan import Target, condition

CONSONANTS = "bcdfghjklmnpqrstvwxz"
# Columns of these types hold numbers only: not scanned for words.
NUMERIC_TYPES = ("vector", "sparsevec", "halfvec", "bytea")


def marker(name: str) -> str:
    """A word no text holds by chance, kept whole by every analyser (no vowel for a
    stemmer to cut at, no digit to split at)."""
    return "zq" + name + "".join(random.choices(CONSONANTS, k=10)) + "qx"


def target(tenant_id: str, user_id: str | None) -> Target:
    return Target(tenant_id, user_id, uuid.uuid4())


def counts(tenant_id: str, user_id: str | None) -> dict[str, int]:
    with session_scope() as session:
        return census(session=session, target=target(tenant_id, user_id))


def snapshot(tenant_id: str, user_id: str | None) -> dict[str, list[str]]:
    """Every row of the user (tenant) in every place of the catalog, all columns, as
    JSON text, sorted: two snapshots are equal only if no byte changed."""
    found: dict[str, list[str]] = {}
    probe = target(tenant_id, user_id)
    with session_scope() as session:
        for place in PLACES:
            where = condition(place, probe)
            if where is None:
                continue
            sql = f"SELECT CAST(to_jsonb(t) AS text) FROM {place.table} t WHERE {where}"
            params = {k: v for k, v in probe.params().items() if f":{k}" in sql}
            found[place.table] = sorted(session.execute(text(sql), params).scalars())
    return found


def scan_database(strings: list[str]) -> dict[tuple[str, str], int]:
    """(table, column) -> rows holding any of `strings`, over every table of the schema
    (partitions included, found in pg_catalog) and every non-numeric column."""
    columns = text(
        "SELECT c.relname, a.attname FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid"
        " JOIN pg_type ty ON ty.oid = a.atttypid"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0"
        " AND NOT a.attisdropped AND NOT (ty.typname = ANY(:numeric))"
        " ORDER BY 1, 2"
    )
    patterns = [f"%{s}%" for s in strings]
    found: dict[tuple[str, str], int] = {}
    with session_scope() as session:
        rows = session.execute(columns, {"numeric": list(NUMERIC_TYPES)}).all()
        for table, column in rows:
            n = session.execute(
                text(
                    f'SELECT count(*) FROM "{table}" WHERE CAST("{column}" AS text) ILIKE ANY(:p)'
                ),
                {"p": patterns},
            ).scalar_one()
            if n:
                found[(table, column)] = n
    return found


def _decoded(value: Any) -> str:
    """A Redis value as text, with Celery/kombu message bodies (base64) decoded too."""
    raw = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    parts = [raw]
    try:
        message = json.loads(raw)
    except ValueError:
        return raw
    items = message if isinstance(message, list) else [message]
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("body"), str):
            with contextlib.suppress(ValueError):
                parts.append(base64.b64decode(item["body"]).decode(errors="replace"))
    return "\n".join(parts)


def redis_text(client: redis.Redis, key: Any) -> str:
    kind = client.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if kind == "string":
        values = [client.get(key)]
    elif kind == "hash":
        values = [v for pair in client.hgetall(key).items() for v in pair]
    elif kind == "list":
        values = client.lrange(key, 0, -1)
    elif kind == "set":
        values = list(client.smembers(key))
    elif kind == "zset":
        values = [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
    elif kind == "stream":
        values = [json.dumps(entry, default=str) for entry in client.xrange(key)]
    else:
        values = []
    return "\n".join([_decoded(key), *(_decoded(v) for v in values if v is not None)])


def scan_redis(client: redis.Redis, strings: list[str]) -> list[str]:
    """Keys whose name or value (messages decoded) holds any of `strings`."""
    found = []
    for key in client.scan_iter(count=1000):
        body = redis_text(client, key)
        if any(s.lower() in body.lower() for s in strings):
            found.append(_decoded(key))
    return found


def scan_files(root: Path, strings: list[str]) -> list[str]:
    if not root.exists():
        return []
    found = []
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        body = path.read_text(errors="replace") if path.is_file() else ""
        if any(s.lower() in (name + body).lower() for s in strings):
            found.append(name)
    return found


def bulk_user(tenant_id: str, user_id: str, notes: int, word: str) -> None:
    """`notes` episodes, each with a note (vector, window vector, terms: every mirror),
    provenance, a link to the previous note, an event and lexicon rows, written in SQL."""
    sql = f"""
    WITH src AS (
      SELECT g, gen_random_uuid() AS eid, gen_random_uuid() AS nid,
             CAST((SELECT array_agg(random() + 0 * x + 0 * g) FROM generate_series(1, 384) x)
                  AS vector) AS v
      FROM generate_series(1, :n) g
    ), e AS (
      INSERT INTO episodes (id, tenant_id, user_id, agent_id, session_id, role, content,
        occurred_at, metadata, options, source, status, attempts, created_at, updated_at)
      SELECT eid, :t, :u, 'main', 's-bulk', 'user', 'turn ' || g || ' {word}', now(),
        '{{}}', '{{}}', 'capture', 'done', 1, now(), now() FROM src
    ), n AS (
      INSERT INTO notes (id, lineage_id, version, tenant_id, user_id, agent_id, session_id,
        content, keywords, tags, kind, domain, visibility, pinned, status, importance,
        metadata, occurred_at, created_at, updated_at, valid_from, access_times,
        access_count, first_access_at, last_access_at, half_life_hours, term_count,
        window_term_count, embedding, window_embedding, index_terms, embedding_model)
      SELECT nid, nid, 1, :t, :u, 'main', 's-bulk', 'fact ' || g || ' {word}',
        ARRAY['{word}'], '{{}}', 'episodic', 'general', 'open', false, 'active', 0.5,
        '{{}}', now(), now(), now(), now(), '{{}}', 1, now(), now(), 168, 3, 0, v, v,
        to_tsvector('simple', 'fact ' || g || ' {word}'), 'bulk' FROM src
    )
    INSERT INTO note_sources (note_id, episode_id, relation, created_at)
    SELECT nid, eid, 'extracted', now() FROM src
    """
    with session_scope() as session:
        session.execute(text(sql), {"n": notes, "t": tenant_id, "u": user_id})
        session.execute(
            text(
                "INSERT INTO links (id, tenant_id, user_id, source_id, target_id, kind, weight,"
                " created_by, created_at)"
                " SELECT gen_random_uuid(), CAST(:t AS text), CAST(:u AS text), a.id, b.id,"
                " 'related', 0.5, 'pipeline',"
                " now() FROM (SELECT id, row_number() OVER (ORDER BY id) r FROM notes"
                " WHERE tenant_id = :t AND user_id = :u) a JOIN (SELECT id, row_number()"
                " OVER (ORDER BY id) r FROM notes WHERE tenant_id = :t AND user_id = :u) b"
                " ON b.r = a.r + 1"
            ),
            {"t": tenant_id, "u": user_id},
        )
        session.execute(
            text(
                "INSERT INTO events (tenant_id, user_id, actor, action, entity_type,"
                " entity_id, data, created_at)"
                " SELECT CAST(:t AS text), CAST(:u AS text), 'pipeline',"
                " 'note.created',"
                " 'note', CAST(id AS text), '{}', now() FROM notes"
                " WHERE tenant_id = :t AND user_id = :u"
            ),
            {"t": tenant_id, "u": user_id},
        )
        session.execute(
            text(
                "INSERT INTO lexicon (tenant_id, user_id, field, term, doc_count)"
                " VALUES (:t, :u, 'own', :w, :n), (:t, :u, 'own', 'fact', :n)"
            ),
            {"t": tenant_id, "u": user_id, "w": word, "n": notes},
        )
