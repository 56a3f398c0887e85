"""What a user's searches read, read ahead when the user becomes active.

Why: a search touches a few hundred pages of its user's partitions (the HNSW graph, the
terms and their indexes, the window vectors) and of the shared `notes` heap (the
candidates' rows). After a restart, or after a while on a machine whose page cache is
reclaimed, each of those is a disk read of ~100 µs made one at a time: a 100k-note
user's first searches took 116 ms mean against 37 warm, and reading the user's files
ahead (621 MB in 1.4 s) halved the first pass's mean (commit e9cef7f); reading their
`notes` rows too took another 14-43 % off it (commit 715e879), and walking their slices'
graphs into PostgreSQL's buffers took the filtered searches' early misses away
(`memory.retrieval.graph_walk`, commit ac70c84). The kernel reads a whole file, and a
bitmap heap scan a user's rows, far faster than index walks fault them in page by page.

Invariants: never on a request's path — `UserWarmer.note_search` is a dictionary look-up
and at most a hand-off to one background thread; a user is read ahead at most once per
`read_ahead_idle_seconds` of searches, and at start-up the users read ahead most
recently before (`memory.retrieval.recent_users`), newest first, until a total budget
is spent, each then counting as searched; files are read only where they are the server's
own (`memory.retrieval.readahead.local_data_directory`), rows wherever the server is;
at most `max_bytes` of files per user, the dense route's graph first, then rows, then
slice graphs walked (on a thread of their own, each chunk after a moment without
searches: `memory.retrieval.foreground`), in what remains. It only reads: it
changes no data, and any failure only skips it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

from sqlalchemy.orm import Session

from memory.retrieval.foreground import ReadsInFlight
from memory.retrieval.graph_walk import walk_slice_graphs
from memory.retrieval.readahead import (
    RowsRead,
    list_shared_relations,
    list_user_relations,
    local_data_directory,
    read_ahead,
    read_user_rows,
)
from memory.retrieval.recent_users import RecentUsers

log = logging.getLogger(__name__)

# A graph walk fetches its next chunk once no search has run for WALK_QUIET_SECONDS, or
# after WALK_MAX_WAIT_SECONDS of steady traffic: searches find both cores free, and
# under steady load a walk still ends, one chunk per wait (its read-only transaction
# open meanwhile: a 100k user's 129 chunks, about four minutes).
WALK_QUIET_SECONDS = 0.1
WALK_MAX_WAIT_SECONDS = 2.0
# Opens a short read-only transaction for the look-ups (the API passes `session_scope`).
OpenSession = Callable[[], AbstractContextManager[Session]]


class UserWarmer:
    """Starts a user's read-ahead on their first search and on the first after
    `idle_seconds` without one, on one background thread, with the shared indexes when
    no search at all came for as long; remembers the `max_users` most recent users. The
    data directory is checked once, on the first read-ahead: if it is not this
    process's to read, later read-aheads read only rows."""

    def __init__(
        self,
        open_session: OpenSession,
        *,
        max_users: int = 10_000,
        max_pending: int = 64,
        clock: Callable[[], float] = time.monotonic,
        read_rows: bool = True,
        walk_graphs: bool = True,
        recent: RecentUsers | None = None,
        reads: ReadsInFlight | None = None,
    ) -> None:
        self._read_rows = read_rows  # False: files only (a benchmark's comparison)
        self._walk_graphs = walk_graphs  # False: no slice graphs walked (idem)
        self._recent = recent
        self._reads = reads  # the process's searches, which the graph walks give way to
        self._open_session = open_session
        self._max_users = max_users
        self._max_pending = max_pending
        self._clock = clock
        self._lock = threading.Lock()
        self._last_search: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._last_any: float | None = None
        self._pending = 0
        self._directory: Path | None = None
        self._no_files = False  # the data directory is not this process's to read
        # What the background thread did, for logs and tests: read-aheads, files' bytes
        # asked, notes' rows read and slice graphs walked.
        self.read_aheads = 0
        self.bytes_asked = 0
        self.rows_read = 0
        self.graphs_walked = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")
        # Slice graphs are walked on a thread of their own: a walk takes seconds, and
        # queued behind one, the next users' files and rows came too late for their
        # first searches after a cold start (commit 80ce672).
        self._walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-walk")

    def note_search(
        self, tenant_id: str, user_id: str, *, idle_seconds: float, max_bytes: int
    ) -> bool:
        """Record a search; True when it started the user's read-ahead."""
        now, key = self._clock(), (tenant_id, user_id)
        with self._lock:
            last = self._last_search.pop(key, None)
            self._mark_searched(key, now)
            shared = self._last_any is None or now - self._last_any >= idle_seconds
            self._last_any = now
            due = last is None or now - last >= idle_seconds
            if not due or self._pending >= self._max_pending:
                return False
        return self._submit(self._warm, tenant_id, user_id, shared, max_bytes)

    def read_ahead_recent(self, *, max_users: int, total_bytes: int, max_bytes: int) -> bool:
        """At start-up: read ahead the users read ahead most recently before (`recent`),
        newest first, `max_bytes` at most each, until `total_bytes` have been read (the
        last user may take it past by up to `max_bytes`: a user is read whole or not at
        all), on the background thread; True when started. Each user counts as searched
        when its turn comes, so its first search does not read it again; a user who
        searched meanwhile is left to that search's own read-ahead."""
        users = self._recent.most_recent(max_users) if self._recent is not None else []
        if not users:
            return False
        return self._submit(self._warm_recent, users, total_bytes, max_bytes)

    def _submit(
        self, work: Callable[..., object], *args: object, on: ThreadPoolExecutor | None = None
    ) -> bool:
        """Hand `work` to a background thread (the read-ahead's unless `on`), counted as
        pending until it calls `_done`; False when the executor is shutting down (the
        process is exiting)."""
        with self._lock:
            self._pending += 1
        try:
            (on or self._executor).submit(work, *args)
        except RuntimeError:
            self._done()
            return False
        return True

    def _warm_recent(self, users: list[tuple[str, str]], total_bytes: int, max_bytes: int) -> None:
        spent = 0
        try:
            for key in users:
                if spent >= total_bytes:
                    break
                with self._lock:
                    if key in self._last_search:
                        continue  # searched since the start: its own read-ahead is queued
                    now = self._clock()
                    self._mark_searched(key, now)
                    shared, self._last_any = self._last_any is None, now
                    self._pending += 1
                spent += self._warm(*key, shared, max_bytes)
            log.info("read ahead %d MB of recent users' files and rows", spent >> 20)
        finally:
            self._done()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Whether every started read-ahead finished within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._pending == 0:
                    return True
            time.sleep(0.01)
        return False

    def _mark_searched(self, key: tuple[str, str], now: float) -> None:
        """Under the lock: `key` searched at `now`, the oldest forgotten beyond max_users."""
        self._last_search[key] = now
        if len(self._last_search) > self._max_users:
            self._last_search.popitem(last=False)

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1

    def _warm(self, tenant_id: str, user_id: str, shared: bool, max_bytes: int) -> int:
        started = time.perf_counter()
        try:
            common, own = self._read_files(tenant_id, user_id, shared, max_bytes)
            rows = RowsRead(0, 0)
            if self._read_rows and own < max_bytes:
                with self._open_session() as session:
                    rows = read_user_rows(
                        session=session,
                        tenant_id=tenant_id,
                        user_id=user_id,
                        max_bytes=max_bytes - own,
                    )
            if self._walk_graphs and own + rows.bytes < max_bytes:
                remaining = max_bytes - own - rows.bytes
                self._submit(self._walk, tenant_id, user_id, remaining, on=self._walker)
            if self._recent is not None:
                self._recent.remember(tenant_id, user_id)
            with self._lock:
                self.read_aheads += 1
                self.bytes_asked += common + own
                self.rows_read += rows.rows
            elapsed_ms = (time.perf_counter() - started) * 1000
            log.debug(
                "read ahead %d MB of %s/%s's files and %d of their rows in %.0f ms",
                (common + own) >> 20,
                tenant_id,
                user_id,
                rows.rows,
                elapsed_ms,
            )
            return common + own + rows.bytes
        except Exception:  # a cache warmer only: its failure must not disturb anything
            log.warning("read-ahead of %s/%s failed", tenant_id, user_id, exc_info=True)
            return 0
        finally:
            self._done()

    def _walk(self, tenant_id: str, user_id: str, max_bytes: int) -> None:
        started = time.perf_counter()
        try:
            with self._open_session() as session:
                walked = walk_slice_graphs(
                    session=session,
                    tenant_id=tenant_id,
                    user_id=user_id,
                    max_bytes=max_bytes,
                    wait_quiet=self._wait_quiet,
                )
            with self._lock:
                self.graphs_walked += walked.graphs
            log.debug(
                "walked %d slice graphs of %s/%s (%d entries) in %.0f ms",
                walked.graphs,
                tenant_id,
                user_id,
                walked.entries,
                (time.perf_counter() - started) * 1000,
            )
        except Exception:  # as the read-ahead: a failure only skips it
            log.warning("graph walk of %s/%s failed", tenant_id, user_id, exc_info=True)
        finally:
            self._done()

    def _wait_quiet(self) -> None:
        if self._reads is not None:
            self._reads.wait_quiet(quiet=WALK_QUIET_SECONDS, max_wait=WALK_MAX_WAIT_SECONDS)

    def _read_files(
        self, tenant_id: str, user_id: str, shared: bool, max_bytes: int
    ) -> tuple[int, int]:
        """The shared indexes' bytes asked (when `shared`) and the user's; none when the
        data directory is not this process's to read."""
        if self._no_files:
            return 0, 0
        with self._open_session() as session:
            if self._directory is None:
                self._directory = local_data_directory(session=session)
                self._no_files = self._directory is None
            if self._directory is None:
                return 0, 0
            common = list_shared_relations(session=session) if shared else []
            own = list_user_relations(session=session, tenant_id=tenant_id, user_id=user_id)
        # Each within the budget: the shared indexes serve every user's searches.
        return (
            read_ahead(self._directory, common, max_bytes=max_bytes),
            read_ahead(self._directory, own, max_bytes=max_bytes),
        )
