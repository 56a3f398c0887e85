"""Optional sampling profiles of running services with py-spy (pip install py-spy).

`record()` starts `py-spy record` on a process and its subprocesses (a Celery worker and
its pool) in raw (collapsed stack) format; `stage_shares()` reads such a file and tells
what share of the sampled busy time sat under each pipeline stage. Idle threads are not
sampled, so the shares are of CPU-busy (or blocked-in-call) time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

# (function, a piece of its file path) of collapsed frames "function (path:line)".
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "extract + construct": (("extract_episode", "episodes/pipeline"),),
    "embed (embed_pending_notes)": (("embed_pending_notes", "notes/embed"),),
    "  onnx Session.run": (("Session.run", "onnxruntime"),),
    "decide (decide_notes)": (("decide_notes", "notes/pipeline"),),
    "  similar_notes query": (("similar_notes", "notes/similar"),),
    "  BM25 term index": (("activate_note_terms", "lexicon"), ("index_note_terms", "lexicon")),
    "link + evolve": (("link_notes", "links/pipeline"), ("evolve_by_keywords", "links/evolution")),
    "SQL commit/flush": (("Session.commit", "sqlalchemy/orm"), ("Session.flush", "sqlalchemy/orm")),
    "compiled statements": (
        ("CompiledStatement.rows", "memory/db"),
        ("CompiledStatement.run_many", "memory/db"),
    ),
    "waiting on PostgreSQL (psycopg)": (("Connection.wait", "psycopg"),),
    "Redis I/O": (("send_packed_command", "redis"), ("_read_from_socket", "redis")),
    "publishing tasks": (("apply_async", "celery"),),
    "api: authenticate": (("get_principal", "api/deps"),),
    "api: parse + validate": (("parse_episodes", "routes/episodes"),),
    "api: insert episodes": (("capture_episodes", "episodes/service"),),
    "api: enqueue (publish)": (("enqueue_episodes", "tasks/pipeline"),),
}


def _frames(stack: str) -> list[tuple[str, str]]:
    out = []
    for frame in stack.split(";"):
        name, _, where = frame.partition(" (")
        out.append((name.strip(), where))
    return out


def _matches(frames: list[tuple[str, str]], markers: tuple[tuple[str, str], ...]) -> bool:
    """A frame named `name` (or `Class.name`) in a file whose path contains `hint`."""
    return any(
        (n == name or n.endswith("." + name)) and hint in where
        for n, where in frames
        for name, hint in markers
    )


def py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if Path(found).exists() else None


def record(pid: int, seconds: float, output: Path) -> subprocess.Popen[bytes] | None:
    """Start a py-spy recording (returns None when py-spy is not installed)."""
    exe = py_spy()
    if exe is None:
        print("py-spy not installed: no profile", file=sys.stderr)
        return None
    output.parent.mkdir(parents=True, exist_ok=True)
    argv = [exe, "record", "--pid", str(pid), "--subprocesses", "--format", "raw"]
    argv += ["--duration", str(int(seconds)), "--rate", "50", "--nonblocking"]
    return subprocess.Popen(
        [*argv, "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stage_shares(path: Path) -> dict[str, float]:
    """Share of all samples whose stack contains each stage's frames (inclusive)."""
    total = 0
    hits: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        frames = _frames(stack)
        for stage, markers in STAGES.items():
            if _matches(frames, markers):
                hits[stage] += int(count)
    return {stage: hits[stage] / total for stage in STAGES} | {"samples": float(total)}


def top_frames(path: Path, top: int = 12) -> list[tuple[str, float]]:
    """The leaf frames (self time) with the largest share of samples."""
    total = 0
    leaves: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        leaves[stack.rsplit(";", 1)[-1]] += int(count)
    return [(frame, n / max(1, total)) for frame, n in leaves.most_common(top)]


def profile_workers(
    processes: dict[str, subprocess.Popen[bytes]],
    seconds: float,
    out_dir: Path,
    prefix: str = "worker",
) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """Start one recording per service named `prefix*` (with subprocesses) for `seconds`."""
    handles = []
    for name, process in processes.items():
        if name.startswith(prefix):
            path = out_dir / f"ingest-profile-{name}.txt"
            recorder = record(process.pid, seconds, path)
            if recorder is not None:
                handles.append((recorder, path))
    return handles


def finish_profiles(handles: list[tuple[subprocess.Popen[bytes], Path]]) -> dict[str, object]:
    """Wait for the recordings; stage shares and top leaf frames of each."""
    out: dict[str, object] = {}
    for recorder, path in handles:
        recorder.wait(timeout=600)
        if path.is_file():
            out[path.name] = {"stages": stage_shares(path), "top_frames": top_frames(path)}
    return out
