"""How long the upgrade's derived-data rebuild takes (migration 0012, `muma db upgrade`).

On a kept home with notes in it (the latency benchmark's million by default), every note
is put back where migration 0012 leaves a database it upgrades (`derived_version` 1, no
agent may rank by its windows), then `memory.ops.migrations.rebuild_derived` runs as the
upgrade runs it, and its wall time, notes per second and the windows it rewrote are
printed. The home is changed: the notes end rebuilt.

    .venv/bin/python -m benchmarks.latency --home /tmp/muma-latency --load-only
    .venv/bin/python -m benchmarks.rebuild_derived --home /tmp/muma-latency
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sqlalchemy import text

from benchmarks.common import Row, fmt, print_table, write_results
from benchmarks.stack import BenchStack
from memory.db import session_scope
from memory.ops.migrations import rebuild_derived


def _mark_stale() -> tuple[int, float]:
    """Every note as migration 0012 leaves it; (notes, seconds)."""
    started = time.perf_counter()
    with session_scope() as session:
        count = session.execute(
            text("UPDATE notes SET derived_version = 1, window_readers = '{}'")
        ).rowcount
    return int(count or 0), time.perf_counter() - started


def _changed() -> int:
    with session_scope() as session:
        return int(
            session.execute(
                text("SELECT count(*) FROM notes WHERE window_readers IS DISTINCT FROM '{}'")
            ).scalar_one()
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, required=True, help="a kept home with notes")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with BenchStack(home=args.home, keep=True, api=False, workers=0, beat=False):
        notes, mark_s = _mark_stale()
        print(f"marked {notes:,} notes as an upgrade from before 0012 leaves them ({mark_s:.0f} s)")
        started = time.perf_counter()
        rebuilt = rebuild_derived(lambda line: print(line, flush=True))
        seconds = time.perf_counter() - started
        given = _changed()
    rows = [
        Row("notes rebuilt", f"{rebuilt:,}"),
        Row("wall time (s)", fmt(seconds, 0)),
        Row("notes per second", fmt(rebuilt / seconds if seconds else 0.0, 0)),
        Row("notes given readers or a new window", f"{given:,}"),
    ]
    print_table("Derived-data rebuild after an upgrade", rows)
    results = {"notes": notes, "rebuilt": rebuilt, "seconds": seconds, "changed": given}
    print(f"results: {write_results('rebuild-derived', results, args.json)}")


if __name__ == "__main__":
    main()
