"""How long `muma` takes to answer, as a terminal user waits for it.

Each command runs as a fresh process (the console script, as installed) `--runs` times;
reported: median and worst wall time. `--help` and a command's help load no service code
(`memory.cli.main.LazyGroup`); `tokens list` and `tokens create` attach to a running
embedded PostgreSQL in a home of the benchmark's own, as beside a running `muma up`.

    .venv/bin/python -m benchmarks.cli_start [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import Row, fmt, print_table, write_results
from memory.runtime.embedded import start_postgres, stop_postgres

ROOT = Path(__file__).resolve().parents[1]
MUMA = str(ROOT / ".venv" / "bin" / "muma")
# Seconds: the group's help, and any other command (its help or a simple read).
TARGETS = {"help": 0.5, "simple": 1.5}
COMMANDS: list[tuple[str, list[str], str]] = [
    ("muma --help", ["--help"], "help"),
    ("muma tokens --help", ["tokens", "--help"], "simple"),
    ("muma search --help", ["search", "--help"], "simple"),
    ("muma tokens list", ["tokens", "list"], "simple"),
    ("muma tokens create --role viewer", ["tokens", "create", "--role", "viewer"], "simple"),
]


def time_command(args: list[str], env: dict[str, str], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([MUMA, *args], env=env, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"muma {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="muma-cli-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MUMA_")}
    env["MUMA_HOME"] = str(home)
    try:
        start_postgres(home, stop_at_exit=True)
        subprocess.run([MUMA, "db", "upgrade"], env=env, check=True, capture_output=True)
        measured = {name: time_command(argv, env, args.runs) for name, argv, _ in COMMANDS}
    finally:
        stop_postgres(home)
        shutil.rmtree(home, ignore_errors=True)
    rows, results = [], {}
    for name, _, kind in COMMANDS:
        median, worst = statistics.median(measured[name]), max(measured[name])
        target = TARGETS[kind]
        rows.append(Row(name, f"{fmt(median, 2)} / {fmt(worst, 2)} s", f"≤ {target} s",
                        median <= target))  # fmt: skip
        results[name] = {"median_s": median, "max_s": worst, "target_s": target}
    print_table(f"muma start-up: median / worst of {args.runs} runs", rows)
    path = write_results("cli-start", {"runs": args.runs, "commands": results}, args.json)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
