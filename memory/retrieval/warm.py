"""A user's search files read ahead into the OS page cache when the user becomes active.

Why: a search touches a few hundred pages of its user's partitions (the HNSW graph, the
terms and their indexes, the window vectors). After a restart, or after a while on a
machine whose page cache is reclaimed, each of those is a disk read of ~100 µs made one
at a time: a 100k-note user's first searches took 116 ms mean against 37 warm, and
reading the user's files ahead (621 MB in 1.4 s) halved the first pass's mean
(benchmarks/README.md, session 16). The kernel reads a whole file far faster than the
index walks fault it in page by page.

Invariants: never on a request's path — `UserWarmer.note_search` is a dictionary look-up
and at most a hand-off to one background thread; a user is read ahead at most once per
`read_ahead_idle_seconds` of searches; only files of the very cluster the session is connected
to are read (the local data directory's `global/pg_control` must carry the server's
system identifier, so a server on another host, or a different cluster at the same path,
is never read); at most `max_bytes` per user, the dense route's graph first. It only
reads: it changes no data, and any failure only skips it.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

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
# 764 of ix_notes_session_turn's (session 17).
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
    rank: int  # read order: the dense graph first, then other indexes, then heaps


def list_user_relations(*, session: Session, tenant_id: str, user_id: str) -> list[RelationFile]:
    """The relations a search of this user reads, in reading order: for each search
    table, the user's partition and its indexes; of the HNSW graphs, only the one the
    dense route uses (the user's dedicated graph when it has one, else the partition's)."""
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
        if row.partial and row.name != own_graph:
            continue  # another user's dedicated graph
        is_graph = row.method == "hnsw"
        if is_graph and has_own_graph and row.name != own_graph:
            continue  # the shared graph, which the user's searches no longer walk
        rank = 0 if is_graph else 1 if row.kind == "i" else 2
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


# Opens a short read-only transaction for the look-ups (the API passes `session_scope`).
OpenSession = Callable[[], AbstractContextManager[Session]]


class UserWarmer:
    """Starts a user's read-ahead on their first search and on the first after
    `idle_seconds` without one, on one background thread, with the shared indexes when
    no search at all came for as long; remembers the `max_users` most recent users. The
    data directory is checked once, on the first read-ahead: if it is not this
    process's to read, every later call is a no-op."""

    def __init__(
        self,
        open_session: OpenSession,
        *,
        max_users: int = 10_000,
        max_pending: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_session = open_session
        self._max_users = max_users
        self._max_pending = max_pending
        self._clock = clock
        self._lock = threading.Lock()
        self._last_search: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._last_any: float | None = None
        self._pending = 0
        self._directory: Path | None = None
        self._disabled = False
        # What the background thread did, for logs and tests: read-aheads and bytes asked.
        self.read_aheads = 0
        self.bytes_asked = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")

    def note_search(
        self, tenant_id: str, user_id: str, *, idle_seconds: float, max_bytes: int
    ) -> bool:
        """Record a search; True when it started the user's read-ahead."""
        now, key = self._clock(), (tenant_id, user_id)
        with self._lock:
            last = self._last_search.pop(key, None)
            self._last_search[key] = now
            if len(self._last_search) > self._max_users:
                self._last_search.popitem(last=False)
            shared = self._last_any is None or now - self._last_any >= idle_seconds
            self._last_any = now
            due = last is None or now - last >= idle_seconds
            if not due or self._disabled or self._pending >= self._max_pending:
                return False
            self._pending += 1
        try:
            self._executor.submit(self._warm, tenant_id, user_id, shared, max_bytes)
        except RuntimeError:  # the executor is shutting down (the process is exiting)
            self._done()
            return False
        return True

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Whether every started read-ahead finished within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._pending == 0:
                    return True
            time.sleep(0.01)
        return False

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1

    def _warm(self, tenant_id: str, user_id: str, shared: bool, max_bytes: int) -> int:
        started = time.perf_counter()
        try:
            with self._open_session() as session:
                if self._directory is None:
                    self._directory = local_data_directory(session=session)
                    self._disabled = self._directory is None
                if self._directory is None:
                    return 0
                common = list_shared_relations(session=session) if shared else []
                own = list_user_relations(session=session, tenant_id=tenant_id, user_id=user_id)
            # Each within the budget: the shared indexes serve every user's searches.
            asked = read_ahead(self._directory, common, max_bytes=max_bytes)
            asked += read_ahead(self._directory, own, max_bytes=max_bytes)
            with self._lock:
                self.read_aheads += 1
                self.bytes_asked += asked
            log.debug(
                "read ahead %d MB of %s/%s's files in %.0f ms",
                asked >> 20,
                tenant_id,
                user_id,
                (time.perf_counter() - started) * 1000,
            )
            return asked
        except Exception:  # a cache warmer only: its failure must not disturb anything
            log.warning("read-ahead of %s/%s failed", tenant_id, user_id, exc_info=True)
            return 0
        finally:
            self._done()
