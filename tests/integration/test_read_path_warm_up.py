"""The API's start-up search (memory.retrieval.read.warm_read_path) runs the request's
own pieces against the real database and leaves nothing behind."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from memory.db import session_scope
from memory.retrieval import read

pytestmark = pytest.mark.integration


def test_the_warm_up_search_runs_and_writes_nothing(database_url: str) -> None:
    def counts() -> tuple[int, int]:
        with session_scope() as session:
            notes = session.scalar(text("SELECT count(*) FROM notes"))
            users = session.scalar(
                text("SELECT count(*) FROM notes WHERE user_id = :u"),
                {"u": read.WARM_UP_VIEWER.user_id},
            )
        return int(notes or 0), int(users or 0)

    before = counts()
    read.warm_read_path()
    assert counts() == before and before[1] == 0
