"""The embedded PostgreSQL starts with the configured shared_buffers, restarting once."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory.config import reset_settings_cache
from memory.runtime.embedded import pg_data_dir, start_postgres, stop_postgres
from memory.runtime.pg_memory import ensure_shared_buffers

pytestmark = pytest.mark.integration


def test_shared_buffers_follow_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUMA_EMBEDDED_SHARED_BUFFERS", "192MB")
    reset_settings_cache()
    home = tmp_path / "home"
    try:
        uri = start_postgres(home, stop_at_exit=False)
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("192MB",)
        admin = uri.replace("/muma?", "/postgres?")
        # Already running with the wanted size: no second restart.
        assert ensure_shared_buffers(admin, pg_data_dir(home), 192) is False
        # A server that is already running is never restarted to resize it.
        monkeypatch.setenv("MUMA_EMBEDDED_SHARED_BUFFERS", "256MB")
        reset_settings_cache()
        again = start_postgres(home, stop_at_exit=False)
        with psycopg.connect(again) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("192MB",)
    finally:
        stop_postgres(home)
        reset_settings_cache()
