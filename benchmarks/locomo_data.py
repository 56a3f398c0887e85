"""LoCoMo loading: turns (what may be ingested), questions with normalised evidence, recall.

Only turns are ever ingested (speaker, text, image caption, session date): never the
questions, answers, observations or summaries (see shared/eval/README.md).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D:?(\d+):0*(\d+)")


DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/eval/locomo10.json"
INGESTED_MARKER = "locomo-ingested"  # written in a home once benchmarks.locomo ingested it


def kept_home_parser(description: str | None) -> argparse.ArgumentParser:
    """A parser for the trials run on a home `benchmarks.locomo --home DIR` kept: `--home`
    (checked by `parse_kept_home`) and `--data`."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, required=True, help="a home benchmarks.locomo kept")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    return parser


def add_api_env(parser: argparse.ArgumentParser) -> None:
    """`--api-env KEY=VALUE` (repeatable): settings for the API the trial starts, so a
    setting can be compared on one home; `parse_kept_home` turns them into `args.api_env`."""
    parser.add_argument(
        "--api-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the API (repeatable), e.g. MUMA_RETRIEVAL__X=1",
    )


def parse_kept_home(parser: argparse.ArgumentParser) -> argparse.Namespace:
    args = parser.parse_args()
    if not (args.home / INGESTED_MARKER).exists():
        parser.error(f"{args.home} holds no LoCoMo ingest: run benchmarks.locomo --home first")
    if isinstance(getattr(args, "api_env", None), list):
        if bad := [item for item in args.api_env if "=" not in item]:
            parser.error(f"--api-env takes KEY=VALUE, not {bad[0]!r}")
        args.api_env = dict(item.split("=", 1) for item in args.api_env)
    return args


@dataclass(frozen=True)
class Turn:
    conversation: str
    session: int
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    occurred_at: datetime


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> tuple[list[Turn], list[Question]]:
    data = json.loads(path.read_text())
    turns: list[Turn] = []
    questions: list[Question] = []
    for sample in data:
        conv_id = sample["sample_id"]
        conversation = sample["conversation"]
        known: set[str] = set()
        for key, value in conversation.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if not match or not isinstance(value, list):
                continue
            session = int(match.group(1))
            when = parse_session_date(conversation[f"session_{session}_date_time"])
            for turn in value:
                known.add(turn["dia_id"])
                turns.append(
                    Turn(
                        conv_id,
                        session,
                        turn["dia_id"],
                        turn["speaker"],
                        turn["text"],
                        turn.get("blip_caption"),
                        when,
                    )
                )
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = normalise_evidence(qa.get("evidence", []), known)
            if evidence:
                questions.append(Question(conv_id, qa["question"], qa["category"], evidence))
    return turns, questions


def normalise_evidence(raw: list[str], known: set[str]) -> tuple[str, ...]:
    """Split joined ids, repair 'D:11:26' and 'D30:05', drop ids of turns that do not exist."""
    found: list[str] = []
    for item in raw:
        for match in _DIA.finditer(item):
            dia = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia in known and dia not in found:
                found.append(dia)
    return tuple(found)


def recall(evidence: tuple[str, ...], retrieved: list[set[str]], k: int) -> float:
    """Fraction of evidence turns among the direct sources of the top-k results."""
    seen: set[str] = set()
    for sources in retrieved[:k]:
        seen |= sources
    return sum(1 for e in evidence if e in seen) / len(evidence)
