"""session_scope on a lost connection: the caller gets TransientError (a 503, a task
retry) even when the rollback fails as well."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError, OperationalError

from memory import db
from memory.errors import TransientError


class _BrokenSession:
    """A session whose connection is gone: commit, rollback and close all fail."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.rolled_back = False

    def commit(self) -> None:
        raise self.error

    def rollback(self) -> None:
        self.rolled_back = True
        raise OperationalError("ROLLBACK", {}, Exception("server closed the connection"))

    def close(self) -> None:
        raise OperationalError("close", {}, Exception("connection already closed"))


def _scope_with(monkeypatch: pytest.MonkeyPatch, session: _BrokenSession) -> Any:
    monkeypatch.setattr(db, "_sessionmaker_for", lambda *a, **k: lambda: session)
    monkeypatch.setattr(db, "resolve_database_url", lambda settings=None: "postgresql://x/y")
    return db.session_scope()


@pytest.mark.parametrize(
    "error",
    [
        OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly")),
        DBAPIError("COMMIT", {}, Exception("lost"), connection_invalidated=True),
    ],
)
def test_a_lost_connection_is_transient_even_when_the_rollback_fails(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    session = _BrokenSession(error)
    with pytest.raises(TransientError), _scope_with(monkeypatch, session):
        pass  # the commit fails
    assert session.rolled_back


def test_an_error_of_the_work_itself_stays_that_error(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _BrokenSession(OperationalError("COMMIT", {}, Exception("unused")))
    with pytest.raises(KeyError), _scope_with(monkeypatch, session):
        raise KeyError("the caller's own bug")
    assert session.rolled_back
