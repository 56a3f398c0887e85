"""Sleep-cycle benchmark: one user with 100k notes; sweep and cycle durations, peak memory.

    .venv/bin/python -m benchmarks.sleep [--notes 100000] [--new-notes N] [--database-url URL]

Starts an embedded PostgreSQL in a temporary MUMA_HOME (unless --database-url), seeds
one user (benchmarks/sleep_data.py), then times, in this process, the domain functions
the maintenance tasks call, each in its own transaction as the task does:

0. the first sweep of the never-swept store (a day ago: it archives the backlog), then
VACUUM ANALYZE notes (what autovacuum does during that day), 1. `muma decay --dry-run`
(read only), 2. tonight's sleep cycle (decay, the first consolidation, the first full
conflict scan, transactive index, stream events built), 3. a day of new notes is
written (--new-notes, default 1% of the store, on existing topics; not part of a
cycle), 4. the next night's cycle (what a steady night costs: incremental conflict
scan, knowledge notes updated), 5. an hourly decay sweep.

Peak memory is this process's peak RSS while a step runs (sampled every 20 ms; the
PostgreSQL server's memory is not included). Results: a table, and
benchmarks/results/sleep.json. Target: the full cycle in ≤ 60 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import Row, fmt, print_table, write_results

TARGET_SECONDS = 60.0
TENANT, USER = "bench", "alice"


@contextmanager
def peak_rss(into: dict[str, float]) -> Iterator[None]:
    """Record the peak resident memory (MiB) of this process while the block runs."""
    process, stop, peak = psutil.Process(), threading.Event(), [0]

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        stop.set()
        sampler.join()
        into["peak_rss_mib"] = max(peak[0], process.memory_info().rss) / 2**20


def timed(label: str, step: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    print(f"{time.strftime('%H:%M:%S')} {label}...", file=sys.stderr, flush=True)
    stats: dict[str, float] = {}
    with peak_rss(stats):
        started = time.perf_counter()
        result = step()
        stats["seconds"] = time.perf_counter() - started
    return result, stats


def _database(args: argparse.Namespace, home: Path) -> None:
    os.environ["MUMA_HOME"] = str(home)
    if args.database_url:
        os.environ["MUMA_DATABASE_URL"] = args.database_url
    else:
        from memory.runtime.embedded import start_postgres

        os.environ["MUMA_DATABASE_URL"] = start_postgres(home, stop_at_exit=False)
    os.environ["MUMA_ACTIVATION__NOISE_ENABLED"] = "false"
    from memory.config import reset_settings_cache
    from memory.ops.migrations import upgrade_database

    reset_settings_cache()
    upgrade_database()


def _seed(n_notes: int, now: datetime) -> dict[str, float]:
    from sqlalchemy import text

    from benchmarks.sleep_data import Plan, insert_notes, note_rows
    from memory.config import get_settings
    from memory.db import get_engine, session_scope

    rows = note_rows(
        Plan(n_notes), tenant_id=TENANT, user_id=USER, now=now, settings=get_settings()
    )
    engine = get_engine().execution_options(isolation_level="AUTOCOMMIT")
    # Bulk load without the HNSW graphs (declared on note_vectors, one per partition), then
    # rebuild them exactly as the schema has them.
    with engine.connect() as conn:
        hnsw = conn.execute(
            text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE "
                "tablename = 'note_vectors' AND indexdef LIKE '%USING hnsw%'"
            )
        ).all()
        for name, _ in hnsw:
            conn.execute(text(f'DROP INDEX "{name}"'))
    _, stats = timed("seeding", lambda: _insert(rows, insert_notes, session_scope))
    with engine.connect() as conn:
        conn.execute(text("SET maintenance_work_mem = '512MB'"))
        for _, definition in hnsw:
            conn.execute(text(definition))
        conn.execute(text("VACUUM ANALYZE notes"))
        conn.execute(text("VACUUM ANALYZE note_vectors"))
    return stats


def _vacuum_notes() -> None:
    from sqlalchemy import text

    from memory.db import get_engine

    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE notes"))


def _write_day(n_notes: int, n_new: int, start: datetime) -> dict[str, int]:
    """A day of new notes (after tonight's cycle, before the next one)."""
    from benchmarks.sleep_data import Plan, insert_notes, new_day_rows
    from memory.config import get_settings
    from memory.db import session_scope

    rows = new_day_rows(Plan(n_notes), n_new, tenant_id=TENANT, user_id=USER, start=start,
                        settings=get_settings())  # fmt: skip
    with session_scope() as session:
        insert_notes(session, rows)
    return {"written": len(rows)}


def _insert(rows: list[dict[str, Any]], insert_notes: Any, session_scope: Any) -> None:
    with session_scope() as session:
        insert_notes(session, rows)


def _cycle(now: datetime) -> dict[str, Any]:
    from memory.config import get_settings
    from memory.conflicts.service import conflict_event_payloads
    from memory.consolidation.cycle import run_sleep_cycle
    from memory.consolidation.service import consolidation_event_payloads
    from memory.db import session_scope

    with session_scope() as session:
        report = run_sleep_cycle(
            session=session, tenant_id=TENANT, user_id=USER, now=now, settings=get_settings()
        )
        events = consolidation_event_payloads(session, report.consolidation)  # type: ignore[arg-type]
        events += conflict_event_payloads(report.conflicts)  # type: ignore[arg-type]
    return {**report.summary(), "events": len(events)}


def _decay(now: datetime, dry_run: bool) -> dict[str, int]:
    from memory.config import get_settings
    from memory.consolidation.cycle import run_decay
    from memory.db import session_scope

    with session_scope() as session:
        report = run_decay(
            session=session,
            tenant_id=TENANT,
            user_id=USER,
            now=now,
            settings=get_settings(),
            dry_run=dry_run,
        )
    assert report is not None
    return report.counts()


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="muma-bench-sleep-"))
    day, hour = timedelta(days=1), timedelta(hours=1)
    try:
        _database(args, home)
        now = datetime.now(UTC).replace(microsecond=0)
        seeded = _seed(args.notes, now)
        # The store has never been swept: its first sweep (a day ago) works off the backlog.
        backlog, backlog_stats = timed("backlog sweep", lambda: _decay(now - day, dry_run=False))
        # A day passes before tonight: autovacuum has cleaned up after the backlog (left
        # to run during the cycle, it competed with it for the CPUs). Timed on its own.
        _, vacuum_stats = timed("vacuum", _vacuum_notes)
        dry, dry_stats = timed("dry run", lambda: _decay(now, dry_run=True))
        first, first_stats = timed("first cycle", lambda: _cycle(now))
        n_new = args.new_notes if args.new_notes is not None else args.notes // 100
        new, new_stats = timed("a day of notes", lambda: _write_day(args.notes, n_new, now))
        second, second_stats = timed("next cycle", lambda: _cycle(now + day))
        sweep, sweep_stats = timed("hourly", lambda: _decay(now + day + hour, dry_run=False))
    finally:
        if not args.database_url:
            from memory.runtime.embedded import stop_postgres

            stop_postgres(home)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "notes": args.notes,
        "seed": seeded,
        "backlog_sweep": {**backlog_stats, "counts": backlog},
        "vacuum_after_backlog": vacuum_stats,
        "decay_dry_run": {**dry_stats, "counts": dry},
        "first_cycle": {**first_stats, "report": first},
        "new_notes": {**new_stats, **new},
        "second_cycle": {**second_stats, "report": second},
        "hourly_sweep": {**sweep_stats, "counts": sweep},
    }


def table(result: dict[str, Any]) -> list[Row]:
    first, second = result["first_cycle"], result["second_cycle"]
    phases = first["report"]["seconds"]
    consolidation = first["report"]["consolidation"]
    conflicts = first["report"]["conflicts"]
    decay = first["report"]["decay"]
    backlog = result["backlog_sweep"]
    return [
        Row("notes (one user)", f"{result['notes']:,}"),
        Row("first sweep of a never-swept store (s)", fmt(backlog["seconds"], 2)),
        Row("  archived / expired / deleted", _counts(backlog["counts"])),
        Row("VACUUM ANALYZE notes after it (s)", fmt(result["vacuum_after_backlog"]["seconds"], 2)),
        Row("decay dry run (s)", fmt(result["decay_dry_run"]["seconds"], 2)),
        Row(
            "nightly sleep cycle, first (s)",
            fmt(first["seconds"], 2),
            f"≤ {TARGET_SECONDS:.0f} s",
            first["seconds"] <= TARGET_SECONDS,
        ),
        *(Row(f"  {name} (s)", fmt(value, 2)) for name, value in phases.items()),
        Row("  archived / expired / deleted", _counts(decay)),
        Row(
            "  episodic notes clustered / noise",
            f"{consolidation['considered'] - consolidation['noise']:,} / "
            f"{consolidation['noise']:,}",
        ),
        Row("  knowledge notes created", f"{consolidation['created']:,}"),
        Row(
            "  conflict candidates / stored open",
            f"{conflicts['candidates']:,} / {_open(conflicts):,}",
        ),
        Row("  peak RSS (MiB)", fmt(first["peak_rss_mib"], 0)),
        Row("new notes written during the day", f"{result['new_notes']['written']:,}"),
        Row(
            "nightly sleep cycle, next night (s)",
            fmt(second["seconds"], 2),
            f"≤ {TARGET_SECONDS:.0f} s",
            second["seconds"] <= TARGET_SECONDS,
        ),
        *(
            Row(f"  {name} (s)", fmt(value, 2))
            for name, value in second["report"]["seconds"].items()
        ),
        Row(
            "  knowledge unchanged / created / updated",
            f"{second['report']['consolidation']['unchanged']:,} / "
            f"{second['report']['consolidation']['created']:,} / "
            f"{second['report']['consolidation']['updated']:,}",
        ),
        Row(
            "  conflict candidates (changed notes) / open",
            f"{second['report']['conflicts']['candidates']:,} / "
            f"{_open(second['report']['conflicts']):,}",
        ),
        Row("  peak RSS (MiB)", fmt(second["peak_rss_mib"], 0)),
        Row("hourly decay sweep (s)", fmt(result["hourly_sweep"]["seconds"], 2)),
        Row("  peak RSS (MiB)", fmt(result["hourly_sweep"]["peak_rss_mib"], 0)),
    ]


def _open(conflicts: dict[str, int]) -> int:
    return conflicts["contradictory"] + conflicts["subsumes"] + conflicts["ambiguous"]


def _counts(counts: dict[str, int]) -> str:
    return f"{counts['archived']:,} / {counts['expired']:,} / {counts['deleted']:,}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--database-url", default=None, help="Use this PostgreSQL instead.")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default results/).")
    parser.add_argument(
        "--new-notes",
        type=int,
        default=None,
        help="Notes written between the two nights (default: 1%% of --notes).",
    )
    args = parser.parse_args(argv)
    result = run(args)
    rows = table(result)
    print_table(f"Sleep cycle, one user with {args.notes:,} notes", rows)
    path = write_results("sleep", {"result": result}, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
