"""`rows.load_candidates`: the candidates' rows and, in the same statement, the seeds'
adjacent turns (the visible notes of the nearest turn before and after in the session).

What neighbour smoothing relies on: only seeds get neighbours; a neighbour is the nearest
turn the viewer may see (another agent's private note, a superseded note and a note
outside the search's filters are skipped over, not returned); other sessions and other
users' notes are never neighbours; the first and last turns have one side only.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory.access.policy import Viewer
from memory.db import session_scope
from memory.notes.models import Note
from memory.retrieval.rows import load_candidates
from memory.retrieval.scope import ReadScope, SearchFilters
from memory.types import utcnow
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration


def _turn(tenant: str, user: str, session_id: str, seq: int, **extra: Any) -> Note:
    fields: dict[str, Any] = {"session_id": session_id, "turn_seq": seq, "kind": "episodic"}
    return new_note(tenant, user, f"turn {seq} of {session_id}", **{**fields, **extra})


@pytest.fixture()
def turns(database_url: str, tenant_id: str, user_id: str) -> dict[str, Note]:
    """Session s1, turns 1-6: 3 is another agent's private note, 4 is superseded (not
    current), 5 is a `decision`; session s2 has a turn 2; another user has s1's too."""
    notes = {
        "t1": _turn(tenant_id, user_id, "s1", 1),
        "t2": _turn(tenant_id, user_id, "s1", 2),
        "t3": _turn(tenant_id, user_id, "s1", 3, agent_id="other", visibility="private"),
        "t4": _turn(tenant_id, user_id, "s1", 4, valid_to=utcnow()),
        "t5": _turn(tenant_id, user_id, "s1", 5, kind="decision"),
        "t6": _turn(tenant_id, user_id, "s1", 6),
        "s2": _turn(tenant_id, user_id, "s2", 2),
        "foreign": _turn(tenant_id, "someone-else", "s1", 3),
    }
    with session_scope() as session:
        session.add_all(notes.values())
    return notes


def _load(
    tenant: str, user: str, ids: list[uuid.UUID], seeds: list[uuid.UUID], **filters: Any
) -> tuple[dict[uuid.UUID, Any], dict[uuid.UUID, list[uuid.UUID]]]:
    scope = ReadScope(Viewer(tenant, user, "main"), SearchFilters(**filters))
    with session_scope() as session:
        return load_candidates(session, scope, ids, seeds, now=utcnow(), decay=0.5)


def test_seeds_get_their_nearest_visible_turns_and_only_seeds(
    turns: dict[str, Note], tenant_id: str, user_id: str
) -> None:
    t = {name: note.id for name, note in turns.items()}
    ids = [t["t1"], t["t2"], t["t5"], t["t6"], t["s2"]]
    rows, adjacent = _load(tenant_id, user_id, ids, seeds=[t["t1"], t["t2"], t["t5"], t["s2"]])
    assert set(rows) == set(ids)
    assert rows[t["t5"]].content == "turn 5 of s1" and rows[t["t5"]].kind == "decision"
    assert adjacent[t["t1"]] == [t["t2"]]  # the first turn: no turn before it
    # 3 (another agent's private note) and 4 (superseded) are skipped over, both ways.
    assert adjacent[t["t2"]] == [t["t1"], t["t5"]]
    assert adjacent[t["t5"]] == [t["t2"], t["t6"]]
    assert t["s2"] not in adjacent  # alone in its session; turn 2 of s1 is not its neighbour
    assert t["t6"] not in adjacent  # not a seed: its neighbours are not looked up


def test_neighbours_outside_the_filters_or_the_user_are_skipped(
    turns: dict[str, Note], tenant_id: str, user_id: str
) -> None:
    t = {name: note.id for name, note in turns.items()}
    _, adjacent = _load(tenant_id, user_id, [t["t2"]], [t["t2"]], kinds=("episodic",))
    assert adjacent[t["t2"]] == [t["t1"], t["t6"]]  # 5 is a decision: outside the filter
    _, other = _load(tenant_id, "someone-else", [t["foreign"]], [t["foreign"]])
    assert other == {}  # the other user's s1 has one turn: mine are not its neighbours


def test_no_ids_read_nothing(database_url: str, tenant_id: str, user_id: str) -> None:
    assert _load(tenant_id, user_id, [], []) == ({}, {})
