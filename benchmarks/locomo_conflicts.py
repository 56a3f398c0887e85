"""Conflict detection on LoCoMo, a conversation without contradictions: what a user who
opens `muma conflicts list` after a sleep cycle finds.

Runs the product's `detect_conflicts` (defaults, no LLM) for every conversation of a home
`benchmarks.locomo --home DIR` ingested, in a transaction that is rolled back (the home is
left as it was), and reports per conversation the pairs compared, each class found and
the conflicts left open; every open one is listed with its reason. LoCoMo has no real
contradiction, so every open conflict is a false one (issue #55's target: at most 3).

    .venv/bin/python -m benchmarks.locomo_conflicts --home /tmp/locomo
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.common import Row, print_table, write_results
from benchmarks.locomo import RESEARCH_ENV, TENANT
from benchmarks.locomo_data import kept_home_parser, parse_kept_home
from benchmarks.stack import BenchStack

TARGET_OPEN = 3


def detect_all(home: Path) -> dict[str, dict[str, Any]]:
    """Each conversation's detection report, rolled back."""
    with BenchStack(
        env=RESEARCH_ENV, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False, api=False
    ):
        from sqlalchemy import text
        from sqlalchemy.orm import Session

        from memory.config import get_settings
        from memory.conflicts.service import AUTO_RESOLVED, detect_conflicts
        from memory.db import get_engine
        from memory.types import utcnow

        settings = get_settings()
        out: dict[str, dict[str, Any]] = {}
        with Session(get_engine(settings)) as session:
            users = sorted(
                session.scalars(
                    text("SELECT DISTINCT user_id FROM notes WHERE tenant_id = :t"), {"t": TENANT}
                )
            )
            for user in users:
                report = detect_conflicts(
                    session=session, tenant_id=TENANT, user_id=user, now=utcnow(), settings=settings
                )
                opened = [
                    (v.classification, v.reason, c.a.content[:100], c.b.content[:100])
                    for c, v in report.found
                    if v.classification not in AUTO_RESOLVED
                ]
                out[user] = {"compared": report.candidates, **report.counts(), "open": opened}
                session.rollback()
        return out


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    found = detect_all(args.home)
    rows = [
        Row(
            user,
            f"{r['compared']} compared; {r['contradictory']} contradictory, "
            f"{r['ambiguous']} ambiguous, {r['subsumes']} subsumes; {len(r['open'])} open",
            f"open ≤ {TARGET_OPEN}",
            len(r["open"]) <= TARGET_OPEN,
        )
        for user, r in found.items()
    ]
    print_table("LoCoMo conflicts after a sleep cycle (defaults, no LLM)", rows)
    for user, r in found.items():
        for classification, reason, a, b in r["open"]:
            print(f"{user} {classification}: {reason}\n  A: {a}\n  B: {b}")
    print(f"results: {write_results('locomo-conflicts', {'conversations': found}, args.json)}")


if __name__ == "__main__":
    main()
