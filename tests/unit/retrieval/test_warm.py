"""Read-ahead (`memory.retrieval.warm`, `memory.retrieval.readahead`) without a server:
which directory counts as the server's, a relation's segment files, and a warmer that
cannot read the files asking for them once."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError

from memory.retrieval.readahead import SEGMENT_BYTES, RelationFile, same_cluster, segment_paths
from memory.retrieval.warm import UserWarmer

SYSTEM_ID = 7_345_123_456_789_012_345


def _cluster(tmp_path: Path, system_identifier: int) -> Path:
    (tmp_path / "global").mkdir()
    control = struct.pack("=Q", system_identifier) + b"\0" * 8184
    (tmp_path / "global" / "pg_control").write_bytes(control)
    return tmp_path


def test_only_the_cluster_with_the_servers_identifier_is_its_own(tmp_path: Path) -> None:
    directory = _cluster(tmp_path, SYSTEM_ID)
    assert same_cluster(directory, SYSTEM_ID)
    assert not same_cluster(directory, SYSTEM_ID + 1)  # another cluster at the same path
    assert not same_cluster(tmp_path / "elsewhere", SYSTEM_ID)  # not on this machine


def test_a_relation_over_1gb_has_a_file_per_segment(tmp_path: Path) -> None:
    def files(size: int) -> list[str]:
        relation = RelationFile("r", "base/5/1234", size, 2)
        return [str(p.relative_to(tmp_path)) for p in segment_paths(tmp_path, relation)]

    assert files(0) == ["base/5/1234"]
    assert files(SEGMENT_BYTES) == ["base/5/1234"]
    assert files(SEGMENT_BYTES * 2 + 1) == ["base/5/1234", "base/5/1234.1", "base/5/1234.2"]


class _NoPrivilege:
    """A session whose server refuses every statement; it records what it was asked."""

    def __init__(self, asked: list[str]) -> None:
        self.asked = asked

    def execute(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        self.asked.append(str(statement))
        raise DBAPIError(str(statement), {}, Exception("denied"))


def test_a_warmer_that_cannot_read_the_files_asks_for_them_once() -> None:
    asked: list[str] = []

    @contextlib.contextmanager
    def open_session() -> Iterator[Any]:
        yield _NoPrivilege(asked)

    warmer = UserWarmer(open_session)
    budget = {"idle_seconds": 0, "max_bytes": 1 << 20}
    assert warmer.note_search("t", "u1", **budget) is True
    assert warmer.wait_idle() and warmer.read_aheads == 0  # the rows were refused too
    assert warmer.note_search("t", "u2", **budget) is True  # rows need no data directory
    assert warmer.wait_idle() and warmer.read_aheads == 0
    directory = [s for s in asked if "data_directory" in s]
    assert len(directory) == 1 and len(asked) == 3  # then one rows' try each


def test_the_users_remembered_are_bounded() -> None:
    @contextlib.contextmanager
    def open_session() -> Iterator[Any]:
        yield _NoPrivilege([])

    # No read-ahead is ever started: only the bookkeeping is under test.
    warmer = UserWarmer(open_session, max_users=2, max_pending=0, clock=lambda: 0.0)
    for user in ("a", "b", "c"):
        assert warmer.note_search("t", user, idle_seconds=60, max_bytes=1) is False
    assert list(warmer._last_search) == [("t", "b"), ("t", "c")]
