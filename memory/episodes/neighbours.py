"""The turns around an episode, as the window text of its notes (write-path stage 2).

Invariants: the neighbours are up to NEIGHBOURS_EACH_SIDE turns before and after the
episode in the same (tenant, user, session), by capture order (`seq`), nearest first
(previous, next, the one before, the one after), so a length cap on the window keeps the
closest context. An episode's line depends only on fields fixed at capture (content,
role, speaker, agent, metadata), so a line computed once is reused by id: consecutive
turns share most of their neighbours.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from functools import cache
from typing import Any

from sqlalchemy import BigInteger, String, bindparam, select, union_all
from sqlalchemy.orm import Session

from memory.db import CompiledStatement
from memory.episodes.models import Episode
from memory.notes.construct import neighbour_line

NEIGHBOURS_EACH_SIDE = 2  # ±2 turns measured better than ±1 on LoCoMo (window BM25)
# Lines kept per worker process; a session's turns arrive close together, so a few
# thousand cover every session in flight.
_LINE_CACHE_SIZE = 4096
_lines: OrderedDict[uuid.UUID, str] = OrderedDict()
_lines_lock = threading.Lock()


def neighbour_lines(session: Session, episode: Episode) -> list[str]:
    """The non-empty "Speaker: text" lines of the episode's neighbours, nearest first."""
    rows = _neighbours_statement().rows(
        session,
        {
            "neighbour_tenant_id": episode.tenant_id,
            "neighbour_user_id": episode.user_id,
            "neighbour_session_id": episode.session_id,
            "neighbour_seq": episode.seq,
        },
    )
    earlier = sorted((r for r in rows if r.seq < episode.seq), key=lambda r: -r.seq)
    later = sorted((r for r in rows if r.seq > episode.seq), key=lambda r: r.seq)
    lines = [_line(row) for row in _nearest_first(earlier, later)]
    return [line for line in lines if line]


def _line(row: Any) -> str:
    with _lines_lock:
        line = _lines.get(row.id)
        if line is not None:
            _lines.move_to_end(row.id)
            return line
    line = neighbour_line(
        row.content, role=row.role, speaker=row.speaker, agent_id=row.agent_id, metadata=row.meta
    )
    with _lines_lock:  # a worker may run tasks on threads (celery -P threads)
        _lines[row.id] = line
        if len(_lines) > _LINE_CACHE_SIZE:
            _lines.popitem(last=False)
    return line


def _nearest_first(before: list[Any], after: list[Any]) -> list[Any]:
    ordered: list[Any] = []
    for index in range(max(len(before), len(after))):
        ordered += [side[index] for side in (before, after) if index < len(side)]
    return ordered


@cache
def _neighbours_statement() -> CompiledStatement:
    # One round trip for both sides, only the columns the lines need.
    scope = (
        Episode.tenant_id == bindparam("neighbour_tenant_id", type_=String),
        Episode.user_id == bindparam("neighbour_user_id", type_=String),
        Episode.session_id == bindparam("neighbour_session_id", type_=String),
    )
    seq = bindparam("neighbour_seq", type_=BigInteger)
    columns = (
        Episode.id,
        Episode.seq,
        Episode.content,
        Episode.role,
        Episode.speaker,
        Episode.agent_id,
        Episode.metadata_.label("meta"),
    )
    before = (
        select(*columns)
        .where(*scope, Episode.seq < seq)
        .order_by(Episode.seq.desc())
        .limit(NEIGHBOURS_EACH_SIDE)
    )
    after = (
        select(*columns)
        .where(*scope, Episode.seq > seq)
        .order_by(Episode.seq)
        .limit(NEIGHBOURS_EACH_SIDE)
    )
    return CompiledStatement(union_all(before.subquery().select(), after.subquery().select()))
