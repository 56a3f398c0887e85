"""Bulk-load synthetic users into the notes table: binary COPY, then indexes and stats.

Rows are what the pipeline would have written (texts with speaker and date words,
tsvectors with positions as `memory.notes.lexicon.tsvector_literal` writes them, term
counts, vectors, access history), loaded user by user with binary COPY; the secondary
indexes (the exact definitions of `Note.__table__` and `NoteVector.__table__`) are
dropped first and built once at the end; the trigger that mirrors each vector into
`note_vectors` is off during the COPY, and `note_vectors` is filled with one INSERT ...
SELECT before its per-partition HNSW graphs are built; lexicon / lexicon_totals are
aggregated in Python exactly like `index_note_terms` counts active, current notes. Each
loaded user is recorded in `$HOME/latency-progress.json`, so an interrupted load resumes.
"""

from __future__ import annotations

import json
import random
import struct
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex

from benchmarks.latency_data import (
    Draft,
    PhraseSpace,
    Profile,
    note_sparse_vectors,
    note_vectors,
    user_drafts,
)
from memory.notes.graphs import PREFIX as GRAPH_PREFIX
from memory.notes.models import Note, NoteTerms, NoteVector
from memory.retrieval.text import analyse, date_terms
from memory.types import DERIVED_VERSION, SPARSE_DIMENSION

TENANT = "bench"
AGENTS = ("main", "helper")
_COLUMNS = """
id uuid lineage_id uuid version int4 tenant_id text user_id text agent_id text
session_id text speaker text content text context text keywords text[] tags text[]
kind text domain text visibility text pinned bool status text importance float8
metadata jsonb occurred_at timestamptz created_at timestamptz updated_at timestamptz
valid_from timestamptz valid_to timestamptz expires_at timestamptz
archived_at timestamptz access_times timestamptz[] access_count int4
first_access_at timestamptz last_access_at timestamptz half_life_hours float8
index_text text window_text text embed_text text index_terms tsvector
window_terms tsvector term_count int4 window_term_count int4 embedding vector
window_embedding vector embedding_model text turn_seq int8 sparse_embedding sparsevec
derived_version int2 window_readers text[]
"""
# Model columns the loader leaves NULL on purpose (no summaries, no superseding links, no
# candidates, no source address) or to their server default (the user's own words: origin
# "user", trust "high", not instruction-like).
LEFT_NULL = frozenset({"summary", "superseded_by", "review", "origin_ref"})
LEFT_DEFAULT = frozenset({"origin", "trust", "instruction_like"})
# The triggers of migrations 0004, 0008 and 0009 that copy each new note's vector into
# note_vectors, its window vector into note_window_vectors and its terms into note_terms.
MIRROR_TRIGGERS = ("notes_vectors_insert", "notes_window_vectors_insert", "notes_terms_insert")


# The notes' columns note_terms mirrors (migration 0009), besides tenant, user and id.
TERMS_COPIED = tuple(
    c.name for c in NoteTerms.__table__.columns if c.name not in ("tenant_id", "user_id", "note_id")
)


def _pairs(spec: str) -> tuple[tuple[str, str], ...]:
    words = spec.split()
    return tuple(zip(words[::2], words[1::2], strict=True))


NOTE_COLUMNS = _pairs(_COLUMNS)
HALF_LIFE = {
    "stable": 4.0,
    "preference": 3.0,
    "knowledge": 4.0,
    "decision": 2.0,
    "episodic": 1.0,
    "ephemeral": 0.25,
}


class Encoded(bytes):
    """A value already in PostgreSQL's binary wire format."""


def _dumper(type_oid: int) -> type[Dumper]:
    class PreEncoded(Dumper):
        format = Format.BINARY
        oid = type_oid

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    return PreEncoded


def register_encoded(conn: psycopg.Connection) -> None:
    for name in ("tsvector", "vector", "sparsevec"):
        info = psycopg.types.TypeInfo.fetch(conn, name)
        assert info is not None, name
        info.register(conn)
        conn.adapters.register_dumper(Encoded, _dumper(info.oid))


def tsvector_binary(terms: list[str]) -> Encoded:
    """tsvector_literal(terms) in tsvector_recv's format (positions kept, weight D)."""
    positions: dict[str, list[int]] = {}
    for index, term in enumerate(terms, start=1):
        positions.setdefault(term, []).append(min(index, 16383))
    parts = [struct.pack("!i", len(positions))]
    for term, where in positions.items():
        where = sorted(set(where[:256]))
        parts.append(term.encode() + b"\0" + struct.pack(f"!H{len(where)}H", len(where), *where))
    return Encoded(b"".join(parts))


def sparse_binary(vector: dict[int, float]) -> Encoded | None:
    """pgvector's sparsevec_recv format: dimension, count, a zero, then the 0-based indices
    in order and their float32 weights, big-endian; None (NULL) for an empty vector."""
    if not vector:
        return None
    terms = sorted(vector)
    header = struct.pack("!iii", SPARSE_DIMENSION, len(terms), 0)
    indices = np.asarray(terms, dtype=">i4").tobytes()
    values = np.asarray([vector[t] for t in terms], dtype=">f4").tobytes()
    return Encoded(header + indices + values)


def vector_binary(matrix: np.ndarray) -> list[Encoded]:
    header = struct.pack("!hh", matrix.shape[1], 0)
    big = matrix.astype(">f4")
    return [Encoded(header + row.tobytes()) for row in big]


@lru_cache(maxsize=4096)
def _date_words(day: datetime) -> tuple[str, list[str]]:
    words = date_terms(day)
    return words, analyse(words)


# --------------------------------------------------------------------------- rows


class UserRows:
    """Rows for one user's notes and links, plus their lexicon statistics."""

    def __init__(self, profile: Profile, drafts: list[Draft], model_id: str) -> None:
        self.profile = profile
        self.drafts = drafts
        self.model_id = model_id
        self.rng = random.Random(f"rows:{profile.seed}:{profile.user_id}")
        self.ids = [uuid.UUID(int=self.rng.getrandbits(128), version=4) for _ in drafts]
        self.df: dict[str, Counter[str]] = {"own": Counter(), "window": Counter()}
        self.totals = {"own": [0, 0], "window": [0, 0]}
        labels = [d.speaker for d in drafts]
        self.lines = [f"{label}: {d.content}" for label, d in zip(labels, drafts, strict=True)]
        self.terms = [analyse(line) for line in self.lines]

    def _neighbours(self, i: int) -> list[int]:
        session = self.drafts[i].session
        return [
            j
            for j in (i - 1, i + 1)
            if 0 <= j < len(self.drafts) and self.drafts[j].session == session
        ]

    def _state(self, d: Draft, now: datetime) -> dict[str, Any]:
        roll = self.rng.random()
        agent = AGENTS[0] if roll < 0.85 else AGENTS[1]
        visibility = "scoped"
        if agent == AGENTS[1]:
            visibility = self.rng.choice(("open", "open", "scoped", "private"))
        elif roll < 0.01:
            visibility = "user-only"
        status = "archived" if self.rng.random() < 0.02 else "active"
        closed = d.occurred_at + timedelta(days=3) if self.rng.random() < 0.01 else None
        accesses = sorted(
            d.occurred_at + timedelta(hours=self.rng.uniform(1, 2000))
            for _ in range(self.rng.choice((0, 0, 0, 0, 0, 1, 2, 4)))
        )
        accesses = [a for a in accesses if a < now]
        expires = d.occurred_at + timedelta(days=7) if d.kind == "ephemeral" else None
        return {
            "agent": agent,
            "visibility": visibility,
            "status": status,
            "closed": closed,
            "accesses": accesses,
            "expires": expires,
        }

    def row(self, i: int, vec: Encoded, win: Encoded, now: datetime) -> tuple[Any, ...]:
        d = self.drafts[i]
        s = self._state(d, now)
        dated, date_words = _date_words(
            d.occurred_at.replace(hour=0, minute=0, second=0, microsecond=0)
        )
        near = self._neighbours(i)
        own_terms = self.terms[i] + date_words
        window_terms = self.terms[i] + [t for j in near for t in self.terms[j]] + date_words
        if s["status"] == "active" and s["closed"] is None:
            for name, terms in (("own", own_terms), ("window", window_terms)):
                self.df[name].update(set(terms))
                self.totals[name][0] += 1
                self.totals[name][1] += len(terms)
        short = f"{d.occurred_at.day} {dated.split()[1]} {d.occurred_at.year}"
        last = s["accesses"][-1] if s["accesses"] else d.occurred_at
        words = self.lines[i].split()
        return (
            self.ids[i],
            self.ids[i],
            1,
            TENANT,
            self.profile.user_id,
            s["agent"],
            f"{self.profile.user_id}-s{d.session}",
            d.speaker,
            d.content,
            self.lines[i][:160],
            [w.strip(".,?'s") for w in words[1:4]],
            [d.domain],
            d.kind,
            d.domain,
            s["visibility"],
            False,
            s["status"],
            0.5,
            {},
            d.occurred_at,
            d.occurred_at,
            d.occurred_at,
            d.occurred_at,
            s["closed"],
            s["expires"],
            d.occurred_at if s["status"] == "archived" else None,
            s["accesses"],
            1 + len(s["accesses"]),
            d.occurred_at,
            last,
            168.0 * HALF_LIFE[d.kind],
            f"{self.lines[i]} {dated}",
            "\n".join([self.lines[i], *(self.lines[j] for j in near)]) + f" {dated}",
            f"{self.lines[i]} ({short})",
            tsvector_binary(own_terms),
            tsvector_binary(window_terms),
            len(own_terms),
            len(window_terms),
            vec,
            win,
            self.model_id,
            i + 1,
        )

    def links(self) -> list[tuple[Any, ...]]:
        """Both directions between consecutive same-topic notes of a session."""
        out = []
        for i in range(1, len(self.drafts)):
            a, b = self.drafts[i - 1], self.drafts[i]
            if a.session == b.session and a.topic == b.topic:
                weight = round(self.rng.uniform(0.5, 0.9), 3)
                for src, dst in ((i - 1, i), (i, i - 1)):
                    out.append(
                        (
                            uuid.uuid4(),
                            TENANT,
                            self.profile.user_id,
                            self.ids[src],
                            self.ids[dst],
                            "related",
                            weight,
                            "pipeline",
                            b.occurred_at,
                        )
                    )
        return out


# --------------------------------------------------------------------------- load


def check_columns() -> None:
    """Fail early when the notes model has a column this loader does not fill."""
    known = {c for c, _ in NOTE_COLUMNS} | LEFT_NULL | LEFT_DEFAULT
    missing = sorted(c.name for c in Note.__table__.columns if c.name not in known)
    if missing:
        raise SystemExit(f"benchmarks/latency_load.py does not fill notes columns {missing}")


def load_user(
    conn: psycopg.Connection, profile: Profile, space: PhraseSpace, *, model_id: str, end: datetime
) -> dict[str, float]:
    """Generate and COPY one user's notes, links and lexicon; returns phase timings."""
    started = time.perf_counter()
    drafts = user_drafts(profile, end=end)
    own, window = note_vectors(drafts, profile, space, profile.seed)
    rows = UserRows(profile, drafts, model_id)
    vecs, wins = vector_binary(own), vector_binary(window)
    sparse = [sparse_binary(v) for v in note_sparse_vectors(drafts, profile, space)]
    generated = time.perf_counter()
    columns = ", ".join(c for c, _ in NOTE_COLUMNS)
    with conn.cursor() as cur:
        cur.execute(
            "DELETE FROM links WHERE tenant_id = %s AND user_id = %s", (TENANT, profile.user_id)
        )
        for table in ("notes", "lexicon", "lexicon_totals"):
            cur.execute(
                f"DELETE FROM {table} WHERE tenant_id = %s AND user_id = %s",
                (TENANT, profile.user_id),
            )
        # Row by row into a live HNSW graph would dominate the load: the mirrors are filled
        # in bulk by build_indexes. ALTER TABLE is transactional: a failed load leaves the
        # triggers enabled.
        for trigger in MIRROR_TRIGGERS:
            cur.execute(f"ALTER TABLE notes DISABLE TRIGGER {trigger}")
        with cur.copy(f"COPY notes ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([t for _, t in NOTE_COLUMNS])
            for i in range(len(drafts)):
                # A read-path load: each window holds its near turns whatever their
                # audience, under the current rule's version, ranked by any reader.
                row = (*rows.row(i, vecs[i], wins[i], end), sparse[i], DERIVED_VERSION, None)
                copy.write_row(row)
        for trigger in MIRROR_TRIGGERS:
            cur.execute(f"ALTER TABLE notes ENABLE TRIGGER {trigger}")
        _copy_side_tables(cur, rows)
    conn.commit()
    done = time.perf_counter()
    return {"generate_s": generated - started, "copy_s": done - generated, "notes": len(drafts)}


def _copy_side_tables(cur: psycopg.Cursor, rows: UserRows) -> None:
    link_cols = "id, tenant_id, user_id, source_id, target_id, kind, weight, created_by, created_at"
    with cur.copy(f"COPY links ({link_cols}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(
            ["uuid", "text", "text", "uuid", "uuid", "text", "float8", "text", "timestamptz"]
        )
        for link in rows.links():
            copy.write_row(link)
    user = rows.profile.user_id
    with cur.copy("COPY lexicon (tenant_id, user_id, field, term, doc_count) FROM STDIN") as copy:
        for name, counts in rows.df.items():
            for term, n in counts.items():
                copy.write_row((TENANT, user, name, term, n))
    for name, (docs, length) in rows.totals.items():
        cur.execute(
            "INSERT INTO lexicon_totals (tenant_id, user_id, field, doc_count, "
            "term_total) VALUES (%s, %s, %s, %s, %s)",
            (TENANT, user, name, docs, length),
        )


def secondary_indexes() -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of notes and its mirrors, exactly as the models
    declare (an index on a partitioned mirror is built on each partition)."""
    dialect = postgresql.dialect()
    indexes = [*Note.__table__.indexes, *NoteVector.__table__.indexes, *NoteTerms.__table__.indexes]
    return [
        (str(ix.name), str(CreateIndex(ix).compile(dialect=dialect)))
        for ix in sorted(indexes, key=lambda ix: str(ix.name))
    ]


def fill_note_vectors(conn: psycopg.Connection) -> None:
    """What the mirror triggers (off during the COPY) would have written, one statement
    per mirror; the mirrors' indexes are dropped first so the inserts do not maintain
    them."""
    for name, statement in secondary_indexes():
        if " ON note_vectors " in statement or " ON note_terms " in statement:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
    conn.execute("TRUNCATE note_vectors")
    conn.execute(
        "INSERT INTO note_vectors (tenant_id, user_id, note_id, active, embedding, kind,"
        " domain, occurred_at, expires_at) SELECT tenant_id, user_id, id, status = 'active',"
        " embedding, kind, domain, occurred_at, expires_at FROM notes"
        " WHERE embedding IS NOT NULL AND status IN ('active', 'archived') AND valid_to IS NULL"
    )
    conn.execute("TRUNCATE note_window_vectors")
    conn.execute(
        "INSERT INTO note_window_vectors (tenant_id, user_id, note_id, window_embedding)"
        " SELECT tenant_id, user_id, id, window_embedding FROM notes WHERE window_embedding"
        " IS NOT NULL AND status IN ('active', 'archived') AND valid_to IS NULL"
    )
    copied = ", ".join(TERMS_COPIED)
    conn.execute("TRUNCATE note_terms")
    conn.execute(
        f"INSERT INTO note_terms (tenant_id, user_id, note_id, {copied})"
        f" SELECT tenant_id, user_id, id, {copied} FROM notes"
        " WHERE status IN ('active', 'archived') AND valid_to IS NULL"
    )


def drop_indexes(conn: psycopg.Connection) -> None:
    for name, _ in secondary_indexes():
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    # Users' own graphs (memory.notes.graphs) too: rebuilt after the load.
    for (name,) in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE indexname LIKE %s", (GRAPH_PREFIX + "%",)
    ).fetchall():
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    conn.execute("DROP INDEX IF EXISTS ix_links_target")
    conn.commit()


def build_indexes(conn: psycopg.Connection, *, memory: str, log: Any) -> dict[str, float]:
    """note_vectors filled, every secondary index built (HNSW last, one graph per
    partition for note_vectors) with raised maintenance memory; then ANALYZE."""
    conn.autocommit = True
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute("SET max_parallel_maintenance_workers = 1")
    conn.add_notice_handler(lambda d: log(f"  notice: {d.message_primary}"))
    timings: dict[str, float] = {}
    started = time.perf_counter()
    fill_note_vectors(conn)
    timings["note_vectors_fill"] = time.perf_counter() - started
    log(f"  note_vectors filled: {timings['note_vectors_fill']:.0f}s")
    statements = sorted(secondary_indexes(), key=lambda kv: "hnsw" in kv[0])
    statements.append(("ix_links_target", "CREATE INDEX ix_links_target ON links (target_id)"))
    for name, statement in statements:
        started = time.perf_counter()
        conn.execute(statement.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
        timings[name] = time.perf_counter() - started
        log(f"  index {name}: {timings[name]:.0f}s")
    started = time.perf_counter()
    for table in (
        "notes",
        "note_vectors",
        "note_window_vectors",
        "note_terms",
        "links",
        "lexicon",
        "lexicon_totals",
    ):
        conn.execute(f"VACUUM ANALYZE {table}")
    timings["vacuum_analyze"] = time.perf_counter() - started
    conn.autocommit = False
    return timings


def read_progress(home: Path) -> dict[str, Any]:
    path = home / "latency-progress.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_progress(home: Path, progress: dict[str, Any]) -> None:
    path = home / "latency-progress.json"
    path.with_suffix(".tmp").write_text(json.dumps(progress, indent=2, default=str))
    path.with_suffix(".tmp").replace(path)
