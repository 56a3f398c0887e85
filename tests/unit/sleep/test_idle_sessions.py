"""Working-memory keys parse back to their (tenant, user, session), escapes included."""

from __future__ import annotations

from memory.config import load_settings
from memory.consolidation.idle_sessions import SessionRef, parse_session_key
from memory.working.service import session_key
from tasks.sleep import idle_grace_seconds


def test_keys_round_trip_through_the_escaping() -> None:
    for ids in (("t", "u", "s"), ("t:1", "u%3A", "s:%:x"), ("a%25b", ":", "%")):
        assert parse_session_key(session_key(*ids)) == SessionRef(*ids)


def test_other_keys_are_ignored() -> None:
    assert parse_session_key("muma:events:t:u") is None
    assert parse_session_key("celery") is None


def test_grace_follows_the_sweep_interval() -> None:
    assert idle_grace_seconds(load_settings(decay={"sweep_interval_minutes": 15})) == 1800
