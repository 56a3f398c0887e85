"""Memory of the embedded PostgreSQL: `shared_buffers` sized for the machine.

PostgreSQL's default of 128 MB holds a fraction of one HNSW graph at scale: a dense search
over 1M notes then reads thousands of pages per query from the OS cache (measured 6-12 µs
each, most of a 100-150 ms query; commit dcce30a).

Invariants: the size is `embedded_shared_buffers` from the settings, or with "auto" a
quarter of the machine's memory within [128 MB, 4 GB]; it is written with ALTER SYSTEM
(kept in the data directory), and the server is restarted only when the running value
differs, so a second start costs nothing; only the process that started the server sizes
it (`embedded.start_postgres`), never one that found it running.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from memory.config import SHARED_BUFFERS_PATTERN as SETTING_PATTERN
from memory.errors import ConfigError

log = logging.getLogger(__name__)

MIN_MB = 128
MAX_AUTO_MB = 4096
# What `embedded_shared_buffers` accepts: the pattern the settings validate with.
_SETTING_RE = re.compile(SETTING_PATTERN)


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def shared_buffers_mb(setting: str, total_bytes: int) -> int:
    """The size in MB for a setting of "auto", "<n>MB" or "<n>GB" (at least 128 MB)."""
    match = _SETTING_RE.match(setting)
    if match is None:
        raise ConfigError(
            f"embedded_shared_buffers must be 'auto' or a size like '512MB' or '2GB', "
            f"not {setting!r}"
        )
    if match.group(2) is None:  # auto
        return max(MIN_MB, min(MAX_AUTO_MB, total_bytes // 4 // 2**20))
    size = int(match.group(2)) * (1024 if match.group(3).upper() == "GB" else 1)
    return max(MIN_MB, size)


def ensure_shared_buffers(admin_uri: str, pgdata: Path, wanted_mb: int) -> bool:
    """Set shared_buffers and restart the server if it runs with another value.

    Returns whether a restart happened.
    """
    import psycopg
    from pgserver import pg_ctl

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        row = conn.execute(
            "SELECT setting::bigint * current_setting('block_size')::bigint / 1048576 "
            "FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()
        if row is not None and int(row[0]) == wanted_mb:
            return False
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(wanted_mb)}MB'")
    log.info("restarting the embedded PostgreSQL with shared_buffers = %d MB", wanted_mb)
    user = "pgserver" if os.geteuid() == 0 else None
    # -l: keep logging to the file pgserver started the server with (else it is lost).
    restart = ["-w", "-m", "fast", "-l", str(pgdata / "log"), "restart"]
    pg_ctl(restart, pgdata=pgdata, user=user, timeout=60)
    return True
