"""Searches right after a cold restart, with and without a user's files read ahead.

On a loaded latency home (`benchmarks/latency.py --load-only`): stop PostgreSQL, empty
the OS page cache (root), start PostgreSQL, run a few searches of a small user (the
libraries and catalog come in), start the product's read-ahead
(`memory.retrieval.warm.UserWarmer`) for one 100k user, then alternate two passes of
searches of that user and of another 100k user not read ahead (or, with `--other-files`,
read ahead without its rows), in process, with the service's defaults. Each round
should swap the two users' roles.

```
.venv/bin/python -m benchmarks.latency_cold --home /tmp/muma-latency \\
    --read-ahead u100k-05 --other u100k-06 --json benchmarks/results/cold.json
```

`--other-files` reads the other user's files ahead too, but not its `notes` rows, so the
two users differ by the rows alone. `--no-wait` searches while the read-ahead runs (as
the API does: it starts the read-ahead after a user's search is answered); without it
the read-ahead finishes first.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.common import Row, fmt, print_table, summarise, write_results
from benchmarks.latency import drop_page_cache

TENANT = "bench"
LIBRARY_USER = "u10k-09"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--home", type=Path, required=True, help="a loaded latency home")
    p.add_argument("--read-ahead", required=True, help="the 100k user whose files are read")
    p.add_argument("--other", required=True, help="a 100k user left cold")
    p.add_argument("--questions", type=int, default=50, help="searches per user and pass")
    p.add_argument(
        "--other-files",
        action="store_true",
        help="read the other user's files ahead too, without its notes' rows",
    )
    p.add_argument("--no-wait", action="store_true", help="search while the read-ahead runs")
    p.add_argument("--seed", type=int, default=7, help="the home's data seed")
    p.add_argument("--json", type=Path)
    return p.parse_args()


def restart_cold(home: Path) -> None:
    """PostgreSQL stopped, the page cache emptied, PostgreSQL started; the process's
    environment pointed at it (the service's defaults)."""
    from memory.config import reset_settings_cache
    from memory.db import dispose_engines
    from memory.runtime.embedded import start_postgres, stop_postgres

    stop_postgres(home)
    drop_page_cache()
    os.environ["MUMA_HOME"] = str(home)
    os.environ["MUMA_DATABASE_URL"] = start_postgres(home, stop_at_exit=True)
    reset_settings_cache()
    dispose_engines()


def main() -> None:
    args = parse_args()
    restart_cold(args.home)
    from benchmarks.latency_data import make_profile, questions
    from benchmarks.latency_probe import _one_search
    from memory.db import session_scope
    from memory.retrieval.warm import UserWarmer

    library = make_profile(LIBRARY_USER, 10_000, args.seed)
    for query in questions(library, 5, prompts=False, salt="cold-libraries"):
        _one_search(LIBRARY_USER, query, {})
    warmer = UserWarmer(session_scope)
    started = time.perf_counter()
    warmer.note_search(TENANT, args.read_ahead, idle_seconds=600, max_bytes=2 << 30)
    if args.other_files:
        files_only = UserWarmer(session_scope, read_rows=False)
        files_only.note_search(TENANT, args.other, idle_seconds=600, max_bytes=2 << 30)
        files_only.wait_idle(timeout=120)
    if not args.no_wait:
        warmer.wait_idle(timeout=120)
    waited = time.perf_counter() - started
    users = (args.read_ahead, args.other)
    count = 2 * args.questions
    asked = {
        u: questions(make_profile(u, 100_000, args.seed), count, prompts=False, salt="cold")
        for u in users
    }
    times: dict[str, list[float]] = {u: [] for u in users}
    for i in range(count):
        # Alternating which goes first, so that neither always meets the other's pages.
        for user in users if i % 2 == 0 else users[::-1]:
            begun = time.perf_counter()
            _one_search(user, asked[user][i], {})
            times[user].append((time.perf_counter() - begun) * 1000)
    warmer.wait_idle(timeout=120)
    report(args, times, warmer.bytes_asked, waited)


def report(
    args: argparse.Namespace, times: dict[str, list[float]], asked: int, waited: float
) -> None:
    n = args.questions
    passes = {
        user: {"first": summarise(ms[:n]), "second": summarise(ms[n:]), "first_ms": ms[:5]}
        for user, ms in times.items()
    }
    rows = [Row("read ahead (MB); waited for it (s)", f"{asked >> 20}; {waited:.2f}")]
    other = "files only read ahead" if args.other_files else "not read ahead"
    for user, label in ((args.read_ahead, "read ahead"), (args.other, other)):
        for name in ("first", "second"):
            s = passes[user][name]
            value = f"{fmt(s['mean'])} / {fmt(s['p95'])} / {fmt(s['max'])}"
            rows.append(Row(f"{user} ({label}), {name} pass: mean / p95 / max ms", value))
        first = ", ".join(f"{ms:.0f}" for ms in passes[user]["first_ms"])
        rows.append(Row(f"{user}: first five searches (ms)", first))
    print_table("Searches after a cold restart (in process)", rows)
    summary = {"args": {k: str(v) for k, v in vars(args).items()}, "passes": passes}
    summary |= {"read_ahead_bytes": asked, "waited_s": waited}
    print(f"results: {write_results('latency-cold', summary, args.json)}")


if __name__ == "__main__":
    main()
