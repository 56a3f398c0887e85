"""What a user's searches read, and reading it ahead of them: the user's partitions of
the search tables with their indexes (files, read into the OS page cache) and the user's
rows of the shared `notes` heap (read into PostgreSQL's buffers).

Invariants: only files of the very cluster the session is connected to are read (the
local data directory's `global/pg_control` must carry the server's system identifier,
so a server on another host, or a different cluster at the same path, is never read);
each reader keeps to the bytes it is given; nothing here writes.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from memory.db import scope_session
from memory.notes.graphs import graph_name

log = logging.getLogger(__name__)

# The tables a search reads per user, each hash-partitioned by (tenant_id, user_id).
SEARCH_TABLES = ("note_vectors", "note_terms", "note_window_vectors")
SEGMENT_BYTES = 1 << 30  # PostgreSQL splits a relation's main fork into 1 GB files.
READ_BYTES = 1 << 20  # read-ahead reads this much at a time (see `_read_through`)

_PARTITION = (
    "SELECT tableoid FROM {table} WHERE tenant_id = :tenant_id AND user_id = :user_id LIMIT 1"
)
# A partition and its indexes, the user's own graph kept and other users' left out (a
# partial index on a shared partition is another user's dedicated graph).
_RELATIONS = text(
    "SELECT c.relname AS name, c.relkind AS kind, pg_relation_filepath(c.oid) AS path,"
    "       pg_relation_size(c.oid) AS size, i.indpred IS NOT NULL AS partial,"
    "       am.amname AS method"
    " FROM pg_class c"
    " LEFT JOIN pg_index i ON i.indexrelid = c.oid"
    " LEFT JOIN pg_am am ON am.oid = c.relam"
    " WHERE c.oid = :partition OR i.indrelid = :partition"
)
# The shared indexes every search reads by key: the candidates' rows by id, the seeds'
# adjacent turns by (tenant, user, session, turn). After a restart a 100k user's 50
# searches, its own files read ahead, still read 3,710 of pk_notes' 4,860 blocks and
# 764 of ix_notes_session_turn's (commit bca35b4).
SHARED_INDEXES = ("pk_notes", "ix_notes_session_turn")
_SHARED = text(
    "SELECT c.relname AS name, pg_relation_filepath(c.oid) AS path,"
    "       pg_relation_size(c.oid) AS size"
    " FROM pg_class c WHERE c.oid = ANY(CAST(:names AS regclass[]))"
)
_IDENTITY = text(
    "SELECT current_setting('data_directory') AS data_directory,"
    "       (SELECT system_identifier FROM pg_control_system()) AS system_identifier"
)


@dataclass(frozen=True)
class RelationFile:
    """A relation's main fork on disk: `path` is relative to the data directory."""

    name: str
    path: str
    size: int
    # Read order: the dense graph first, then other indexes, then heaps, then the
    # graphs of the user's domain slices (only domain-filtered searches walk those).
    rank: int


def list_user_relations(*, session: Session, tenant_id: str, user_id: str) -> list[RelationFile]:
    """The relations a search of this user reads, in reading order: for each search
    table, the user's partition and its indexes; of the HNSW graphs, the one the
    unfiltered dense route uses (the user's dedicated graph when it has one, else the
    partition's), then the user's domain slices' graphs, never another user's."""
    who = {"tenant_id": tenant_id, "user_id": user_id}
    own_graph = graph_name(tenant_id, user_id)
    rows = []
    for table in SEARCH_TABLES:
        partition = session.execute(text(_PARTITION.format(table=table)), who).scalar()
        if partition is not None:
            rows += list(session.execute(_RELATIONS, {"partition": partition}))
    has_own_graph = any(row.name == own_graph for row in rows)
    found = []
    for row in rows:
        own_slice = row.name.startswith(own_graph + "_")  # `domain_graph_name`
        if row.partial and row.name != own_graph and not own_slice:
            continue  # another user's dedicated graph
        is_graph = row.method == "hnsw" and not own_slice
        if is_graph and has_own_graph and row.name != own_graph:
            continue  # the shared graph, which the user's searches no longer walk
        rank = 3 if own_slice else 0 if is_graph else 1 if row.kind == "i" else 2
        found.append(RelationFile(row.name, row.path, int(row.size), rank))
    return sorted(found, key=lambda f: (f.rank, f.name))


def list_shared_relations(*, session: Session) -> list[RelationFile]:
    """The shared indexes every user's searches read (`SHARED_INDEXES`), by name."""
    rows = session.execute(_SHARED, {"names": list(SHARED_INDEXES)})
    return sorted(
        (RelationFile(row.name, row.path, int(row.size), 1) for row in rows),
        key=lambda f: SHARED_INDEXES.index(f.name),
    )


def local_data_directory(*, session: Session) -> Path | None:
    """The server's data directory when this process can read it and it is the server's
    own (same system identifier); None otherwise (another host, no privilege, no file)."""
    try:
        row = session.execute(_IDENTITY).one()
    except DBAPIError as exc:  # no pg_read_all_settings / pg_control_system privilege
        log.info("read-ahead off: the server's data directory is not readable (%s)", exc.orig)
        return None
    directory = Path(row.data_directory)
    if not same_cluster(directory, int(row.system_identifier)):
        log.info("read-ahead off: %s is not this server's data directory here", directory)
        return None
    return directory


def same_cluster(directory: Path, system_identifier: int) -> bool:
    """Whether `directory` here holds the cluster whose identifier the server reported:
    `global/pg_control` starts with it (a native-endian uint64)."""
    try:
        with open(directory / "global" / "pg_control", "rb") as control:
            head = control.read(8)
    except OSError:
        return False
    return len(head) == 8 and struct.unpack("=Q", head)[0] == system_identifier


# The user's active notes' rows, at most :rows of them: a bitmap heap scan reads their
# blocks in file order, with PostgreSQL's own read-ahead, into its shared buffers.
_USER_ROWS = text(
    "SELECT count(occurred_at) FROM (SELECT occurred_at FROM notes"
    " WHERE tenant_id = :tenant_id AND user_id = :user_id AND status = 'active'"
    " LIMIT :rows) AS user_rows"
)
# For this transaction only: the planner's other plans read the rows in key order, one
# random block at a time (an index scan), or the whole shared heap (a sequential scan).
_BITMAP_SCAN_ONLY = text(
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true)"
)
# The heap's bytes per row; a never-analysed table (reltuples -1) counts as one row.
_ROW_BYTES = text(
    "SELECT CAST(pg_relation_size(c.oid) AS float8) / greatest(c.reltuples, 1) FROM pg_class c"
    " WHERE c.oid = CAST('notes' AS regclass)"
)


class RowsRead(NamedTuple):
    rows: int
    bytes: int  # at the heap's mean row size


def read_user_rows(*, session: Session, tenant_id: str, user_id: str, max_bytes: int) -> RowsRead:
    """Read the user's active notes' rows of the shared `notes` heap into PostgreSQL's
    buffers, as many as `max_bytes` holds at the heap's mean row size.

    Why: after a restart, a 100k user's searches read thousands of `notes` blocks one at
    a time (7,334 in 50 searches, commit bca35b4), the candidates' rows and their adjacent
    turns. A user's rows lie wherever they were written, so their files cannot be read
    ahead as a partition's are; the scope index finds their blocks and a bitmap heap
    scan reads them in file order (a 100k user: 31,700 blocks in 0.23 s, commit 715e879).
    The transaction is bound to the user (`scope_session`), so row-level security
    admits no other user's row even if the SQL were wrong.
    """
    row_bytes = max(float(session.execute(_ROW_BYTES).scalar() or 0.0), 1.0)
    rows = int(max_bytes / row_bytes)
    if rows < 1:
        return RowsRead(0, 0)
    scope_session(session, tenant_id=tenant_id, user_id=user_id)
    session.execute(_BITMAP_SCAN_ONLY)
    who = {"tenant_id": tenant_id, "user_id": user_id, "rows": rows}
    read = int(session.execute(_USER_ROWS, who).scalar() or 0)
    return RowsRead(read, int(read * row_bytes))


def segment_paths(directory: Path, relation: RelationFile) -> list[Path]:
    """The files of a relation's main fork: `path`, then `path.1`, ... per 1 GB."""
    count = max(1, -(-relation.size // SEGMENT_BYTES))
    return [directory / relation.path] + [
        directory / f"{relation.path}.{n}" for n in range(1, count)
    ]


def read_ahead(directory: Path, relations: list[RelationFile], *, max_bytes: int) -> int:
    """Read `relations`' files in order into the page cache while their sizes add up to
    at most `max_bytes`; the bytes asked for. A file that vanished (its relation rewritten
    meanwhile) is skipped."""
    asked = 0
    buffer = memoryview(bytearray(READ_BYTES))
    for relation in relations:
        if asked + relation.size > max_bytes:
            break
        for path in segment_paths(directory, relation):
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                _read_through(fd, buffer)
            finally:
                os.close(fd)
        asked += relation.size
    return asked


def _read_through(fd: int, buffer: memoryview) -> None:
    # Read, not advised: POSIX_FADV_WILLNEED queues the whole file's reads at once
    # (700 MB in 0.2 s), and on a slow disk a search's own reads waited behind them: its
    # first search after the advice took 8 s. A read at a time keeps at most the kernel's
    # read-ahead window queued ahead of the searches' reads.
    offset = 0
    while read := os.preadv(fd, [buffer], offset):
        offset += read
