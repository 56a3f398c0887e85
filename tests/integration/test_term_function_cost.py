"""The term-index function is weighed at its cost (migration 0017), so the planner reads a
long-window user's BM25 candidates through the GIN index instead of calling the function
on every row of the user's partition (111 ms against 6-10 ms, benchmarks/longmemeval.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from memory.db import session_scope

pytestmark = pytest.mark.integration


def test_note_user_lexemes_costs_what_it_does(database_url: str) -> None:
    with session_scope() as session:
        cost = session.scalar(
            text("SELECT procost FROM pg_proc WHERE proname = 'note_user_lexemes'")
        )
    assert cost is not None and cost >= 1000
