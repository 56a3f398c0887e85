"""Shared helpers for every benchmark: percentiles, tables, JSON results, machine info.

Benchmarks print a table and write `benchmarks/results/<name>.json`; they are not timed
tests (DESIGN.md §11). `BenchStack` (benchmarks/stack.py) runs the embedded stack.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.stack import ROOT, BenchStack

RESULTS_DIR = Path(__file__).resolve().parent / "results"

__all__ = [
    "RESULTS_DIR",
    "ROOT",
    "BenchStack",
    "Row",
    "machine_info",
    "percentile",
    "print_table",
    "shared_memory_mb",
    "summarise",
    "write_results",
]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    if low == high:
        return float(ordered[low])
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def summarise(values: Sequence[float]) -> dict[str, float]:
    """n, mean, p50, p95, p99 and max of a sample."""
    n = len(values)
    return {
        "n": n,
        "mean": sum(values) / n if n else math.nan,
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values) if n else math.nan,
    }


def shared_memory_mb(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """The machine's shared memory in use (Linux's `Shmem`), in MB; None where unreadable.

    PostgreSQL's buffer pool is shared memory the kernel allocates and zeroes a page at a
    time when first touched, so a measurement during which this grows ran while the pool
    was still filling, each new page costing a page fault (the latency runs of commit
    9700a75)."""
    try:
        for line in meminfo.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "Shmem":
                return int(value.split()[0]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    if not dirty:
        return out
    # Identify the uncommitted state too: results of a dirty tree are tied to its diff.
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=ROOT, capture_output=True, check=False)
    return f"{out}-dirty-{hashlib.sha1(diff.stdout).hexdigest()[:8]}"


def machine_info() -> dict[str, Any]:
    """CPU count, load average, Python, platform, timestamp and git commit."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": git_commit(),
    }


def write_results(name: str, data: dict[str, Any], path: Path | None = None) -> Path:
    """Write `data` plus machine info as JSON (default benchmarks/results/<name>.json)."""
    path = path or RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine_info(), **data}
    path.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


@dataclass(frozen=True)
class Row:
    """One line of a results table: metric, measured value, target, pass/fail (or None)."""

    metric: str
    value: str
    target: str = ""
    passed: bool | None = None

    @property
    def verdict(self) -> str:
        return "" if self.passed is None else ("PASS" if self.passed else "FAIL")


def fmt(value: float, digits: int = 1, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def print_table(title: str, rows: Iterable[Row]) -> None:
    """Print with rich when installed, else as plain text."""
    rows = list(rows)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        for row in rows:
            print(f"  {row.metric:<42} {row.value:>18}  {row.target:<16} {row.verdict}")
        return
    table = Table(title=title)
    for column, justify in (("metric", "left"), ("value", "right"), ("target", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_column("", justify="center")
    for row in rows:
        colour = {"PASS": "green", "FAIL": "red"}.get(row.verdict, "")
        verdict = f"[{colour}]{row.verdict}[/{colour}]" if colour else ""
        table.add_row(row.metric, row.value, row.target, verdict)
    Console().print(table)


def markdown_table(rows: Iterable[Row]) -> str:
    """The same rows as a Markdown table (for benchmarks/README.md)."""
    lines = ["| metric | value | target | |", "|---|---:|---|---|"]
    lines += [f"| {r.metric} | {r.value} | {r.target} | {r.verdict} |" for r in rows]
    return "\n".join(lines)


def post_captures(client: Any, body: dict[str, Any], *, attempts: int = 60) -> Any:
    """POST /v1/episodes as a bulk importer should: a 429 (the workers are behind,
    `pipeline.max_backlog`) is sent again after its Retry-After, with the same
    idempotency keys; any other error is raised. Returns the accepted response."""
    for _ in range(attempts):
        response = client.post("/v1/episodes", json=body)
        if response.status_code != 429:
            response.raise_for_status()
            return response
        time.sleep(float(response.headers.get("Retry-After", "1")))
    raise RuntimeError(f"POST /v1/episodes still 429 after {attempts} attempts")


def add_setting_variant(parser: Any) -> None:
    """`--env KEY=VALUE` (repeatable): a service setting other than the default, for a
    labelled variant row (never the headline); `setting_variant` reads them back."""
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a service setting other than the default (a labelled variant, not the headline)",
    )


def setting_variant(parser: Any, args: Any) -> dict[str, str]:
    if bad := [item for item in args.env if "=" not in item]:
        parser.error(f"--env takes KEY=VALUE, not {bad[0]!r}")
    return dict(item.split("=", 1) for item in args.env)
