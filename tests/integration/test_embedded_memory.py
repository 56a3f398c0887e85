"""The embedded PostgreSQL: configured shared_buffers (restarting once), a pgvector that runs
on this CPU."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory.config import reset_settings_cache
from memory.runtime.embedded import (
    check_pgvector_runs,
    pg_data_dir,
    start_postgres,
    stop_postgres,
)
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
        # The restarted server keeps logging where pgserver's first start did.
        log = (pg_data_dir(home) / "log").read_text()
        assert log.count("ready to accept connections") == 2, log
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


OPERATORS = ["<=>", "<#>", "<->", "<+>"]


@pytest.mark.parametrize("operator", OPERATORS)
def test_vector_distances_run_at_embedding_width(database_url: str, operator: str) -> None:
    """The wheel's AVX-512 build crashed here (SIGILL) on CPUs without it; see
    scripts/portable-pgvector.sh. 384 dimensions reach the vectorised loops."""
    a = "array_fill(0.5::real, ARRAY[384])::vector"
    b = "array_fill(0.25::real, ARRAY[384])::vector"
    expected = {"<=>": 0.0, "<#>": -48.0, "<->": (384 * 0.0625) ** 0.5, "<+>": 96.0}
    with psycopg.connect(database_url) as conn:
        (value,) = conn.execute(f"SELECT {a} {operator} {b}").fetchone()  # type: ignore[misc]
        (halfvec,) = conn.execute(  # type: ignore[misc]
            f"SELECT {a}::halfvec(384) {operator} {b}::halfvec(384)"
        ).fetchone()
    assert value == pytest.approx(expected[operator], abs=1e-4)
    assert halfvec == pytest.approx(expected[operator], abs=1e-3)


def test_pgvector_check_passes_on_the_running_server(database_url: str) -> None:
    check_pgvector_runs(database_url)
