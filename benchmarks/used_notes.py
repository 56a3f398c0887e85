"""The read path on notes that have been used: a search's CPU and wall time when every
note carries a full access history.

The LoCoMo and latency benchmarks switch access recording off (their rankings must not
drift between runs), so their notes keep the one access of their creation. A service in
use is different: every injected note gains an access, and a note used 50 times keeps 50
(DESIGN.md §5). This trial copies a home `benchmarks.locomo --home DIR` kept, gives every
note of the copy `--accesses` stored accesses over the last 60 days (and `--count` in all,
so Petrov's tail is in play), then runs `--questions` LoCoMo questions through
`search_notes` in this process, `--rounds` times, and reports the process's CPU and the
wall time per search. The copy is removed afterwards; the kept home is not touched.

To compare with an earlier revision, run it from a worktree of that revision (copy this
file there first if the revision predates it):

    .venv/bin/python -m benchmarks.used_notes --home /tmp/locomo
    git worktree add /tmp/base REV && ln -s "$PWD/.venv" /tmp/base/.venv
    cp benchmarks/used_notes.py /tmp/base/benchmarks/
    (cd /tmp/base && PYTHONPATH=. .venv/bin/python -m benchmarks.used_notes \\
        --home /tmp/locomo --data "$OLDPWD/../shared/eval/locomo10.json")
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import Row, fmt, percentile, print_table, write_results
from benchmarks.locomo import AGENT, RESEARCH_ENV, TENANT
from benchmarks.locomo_data import Question, kept_home_parser, load, parse_kept_home
from benchmarks.locomo_eval import search_question
from benchmarks.stack import BenchStack
from memory.retrieval.context import CONTEXT_POOL_SIZE

# Stored accesses spread uniformly over this many days before now (deterministic).
HISTORY_DAYS = 60
_GIVE_HISTORIES = """
SELECT setseed(0.24);
UPDATE notes SET
    access_times = (
        SELECT array_agg(at ORDER BY at) FROM (
            SELECT now() - random() * make_interval(days => %(days)s) AS at
            FROM generate_series(1, %(accesses)s) WHERE notes.id IS NOT NULL
        ) AS drawn
    ),
    access_count = %(count)s,
    first_access_at = now() - make_interval(days => 2 * %(days)s);
UPDATE notes SET last_access_at = access_times[cardinality(access_times)];
"""


def copy_home(home: Path) -> Path:
    """A copy of `home` in a temporary folder; refuses a home whose PostgreSQL runs."""
    if any(home.rglob("postmaster.pid")):
        raise SystemExit(f"{home}: its PostgreSQL is running; stop what uses it first")
    parent = Path(tempfile.mkdtemp(prefix="muma-used-notes-"))
    parent.chmod(0o755)  # the embedded server may run as its own user (pgserver, as root)
    copy = parent / "home"
    # cp -a keeps the data folder's owner, which PostgreSQL insists on; copytree would not.
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    return copy


def give_histories(database_url: str, accesses: int, count: int) -> None:
    import psycopg

    from memory.db_url import sqlalchemy_url

    url = sqlalchemy_url(database_url).replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as connection:
        params = {"days": HISTORY_DAYS, "accesses": accesses, "count": max(count, accesses)}
        for statement in filter(str.strip, _GIVE_HISTORIES.split(";")):
            connection.execute(statement, params)  # type: ignore[arg-type]
        connection.execute("VACUUM ANALYZE notes")


def measure(questions: list[Question], rounds: int) -> list[dict[str, float]]:
    """Per round: mean CPU ms of this process per search, and wall p50 / p95 ms."""
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.db import session_scope

    settings = get_settings()
    vectors = [embed_query(q.question, settings) for q in questions]  # embedded beforehand
    results = []
    for index in range(rounds):
        cpu, wall = [], []
        for question, vector in zip(questions, vectors, strict=True):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            with session_scope(custom_plans=True) as session:
                search_question(
                    session,
                    question,
                    tenant_id=TENANT,
                    agent_id=AGENT,
                    vector=vector,
                    top_k=CONTEXT_POOL_SIZE,  # what a /v1/context search asks for
                )
            cpu.append((time.process_time() - cpu0) * 1000)
            wall.append((time.perf_counter() - wall0) * 1000)
        results.append(
            {
                "cpu_ms_mean": statistics.fmean(cpu),
                "wall_ms_p50": percentile(wall, 50),
                "wall_ms_p95": percentile(wall, 95),
            }
        )
        print(f"round {index + 1}/{rounds}: {results[-1]}", flush=True)
    return results


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--accesses", type=int, default=50, help="stored accesses per note")
    parser.add_argument("--count", type=int, default=80, help="accesses counted per note")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    if not 1 <= args.accesses <= 50:
        parser.error("--accesses must be 1-50 (a note stores at most 50)")
    _, questions = load(args.data)
    step = max(len(questions) // max(args.questions, 1), 1)
    chosen = questions[::step][: args.questions]
    copy = copy_home(args.home)
    try:
        with BenchStack(
            env=RESEARCH_ENV,
            tenant_id=TENANT,
            home=copy,
            keep=True,
            workers=0,
            beat=False,
            api=False,
        ) as stack:
            give_histories(stack.database_url, args.accesses, args.count)
            rounds = measure(chosen, args.rounds)
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    report(args, len(chosen), rounds)


def report(args: Any, questions: int, rounds: list[dict[str, float]]) -> None:
    rows = [
        Row(
            f"round {i}: CPU ms per search (mean), wall p50 / p95 ms",
            f"{fmt(r['cpu_ms_mean'], 2)}; {fmt(r['wall_ms_p50'])} / {fmt(r['wall_ms_p95'])}",
        )
        for i, r in enumerate(rounds, 1)
    ]
    title = f"search_notes, {questions} LoCoMo questions, {args.accesses} stored accesses per note"
    print_table(title, rows)
    data = {"accesses": args.accesses, "count": args.count, "rounds": rounds}
    print(f"results: {write_results('used-notes', data, args.json)}")


if __name__ == "__main__":
    main()
