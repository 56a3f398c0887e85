"""Knowledge notes on real conversations: what a user who reads the sleep cycle's notes
finds, and how much of it is a fact some question asks about.

Runs the product's consolidation (defaults, no LLM, as a dry run: nothing is written) for
every conversation of a home `benchmarks.locomo --home DIR` ingested, and reports per
conversation the episodic notes considered, the knowledge notes it would write, their
sentences, and two shares of those sentences: from a turn that one of LoCoMo's questions
cites as evidence (a fact worth knowing), and questions or words addressed to "you"
(talk, which a knowledge note should not hold).

    .venv/bin/python -m benchmarks.locomo_knowledge --home /tmp/locomo
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import Row, fmt, print_table, write_results
from benchmarks.locomo import RESEARCH_ENV, TENANT
from benchmarks.locomo_data import kept_home_parser, load, parse_kept_home
from benchmarks.stack import BenchStack

_TALK = re.compile(r"\?|\byou\b|\byour\b", re.IGNORECASE)


def _sentences(summary: str) -> list[str]:
    return [s.strip().rstrip("…") for s in re.split(r"(?<=[.!?])\s+", summary) if s.strip()]


def consolidate_all(home: Path, evidence: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Each conversation's dry-run consolidation, measured."""
    with BenchStack(
        env=RESEARCH_ENV, tenant_id=TENANT, home=home, keep=True, workers=0, beat=False, api=False
    ):
        from memory.config import get_settings
        from memory.consolidation.service import consolidate_user
        from memory.consolidation.snapshot import load_snapshot
        from memory.db import session_scope
        from memory.notes.service import note_sources
        from memory.types import utcnow

        out: dict[str, dict[str, Any]] = {}
        for user in sorted(evidence):
            with session_scope() as session:
                report = consolidate_user(
                    session=session,
                    tenant_id=TENANT,
                    user_id=user,
                    now=utcnow(),
                    settings=get_settings(),
                    dry_run=True,
                )
                snapshot = load_snapshot(session, tenant_id=TENANT, user_id=user)
                episodic = [n for n in snapshot.notes if n.kind == "episodic"]
                sources = note_sources(session=session, note_ids=[n.id for n in episodic])
            turns = {
                n.content: {s["metadata"].get("dia_id") for s in sources.get(n.id, [])}
                for n in episodic
            }
            out[user] = measure(
                [c.content for c in report.changes], turns, evidence[user], report.considered
            )
        return out


def measure(
    summaries: list[str], turns: dict[str, set[str]], evidence: set[str], considered: int
) -> dict[str, Any]:
    """The counts and shares for one conversation (module docstring)."""
    sentences = [s for summary in summaries for s in _sentences(summary)]
    from_evidence = 0
    for sentence in sentences:
        dia = set().union(*(d for text, d in turns.items() if sentence in text), set())
        from_evidence += bool(dia & evidence)
    total = len(sentences) or 1
    return {
        "considered": considered,
        "knowledge_notes": len(summaries),
        "sentences": len(sentences),
        "evidence_share": round(from_evidence / total, 3),
        "talk_share": round(sum(bool(_TALK.search(s)) for s in sentences) / total, 3),
        "notes": summaries,
    }


def main() -> None:
    parser = kept_home_parser(__doc__)
    parser.add_argument("--json", type=Path)
    args = parse_kept_home(parser)
    _, questions = load(args.data)
    evidence: dict[str, set[str]] = defaultdict(set)
    for q in questions:
        evidence[q.conversation].update(q.evidence)
    found = consolidate_all(args.home, evidence)
    rows = [
        Row(
            user,
            f"{r['considered']} considered; {r['knowledge_notes']} notes, {r['sentences']} "
            f"sentences; evidence {fmt(r['evidence_share'], 3)}, talk {fmt(r['talk_share'], 3)}",
        )
        for user, r in found.items()
    ]
    for key in ("evidence_share", "talk_share"):
        mean = statistics.fmean(r[key] for r in found.values())
        rows.append(Row(f"mean {key.replace('_', ' ')}", fmt(mean, 3)))
    print_table("LoCoMo knowledge notes after a sleep cycle (defaults, no LLM)", rows)
    print(f"results: {write_results('locomo-knowledge', {'conversations': found}, args.json)}")


if __name__ == "__main__":
    main()
