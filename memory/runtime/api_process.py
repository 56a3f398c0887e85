"""How the API runs: uvicorn with one process per core behind one port, their Prometheus
samples merged (`muma up` starts it so, `muma serve` runs it alone for the Procfile).

Invariant: every API process of a deployment writes its samples to one directory, emptied
when the API starts, so /metrics, whichever process answers it, counts every process's
requests once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least one."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else os.cpu_count() or 1)


def api_command(host: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "memory.api.app:app",
        "--host",
        host,
        "--port",
        str(port),
        "--no-access-log",  # memory.api.middleware logs each request, as JSON
        "--workers",
        str(workers),
    ]


def api_environment(env: dict[str, str], home: Path) -> dict[str, str]:
    """`env` plus prometheus_client's PROMETHEUS_MULTIPROC_DIR (`home`/run/api-metrics
    unless set), cleared of earlier samples: those of processes that are gone would be
    counted again. Only prometheus_client's own files there are removed."""
    path = Path(env.get("PROMETHEUS_MULTIPROC_DIR") or home / "run" / "api-metrics")
    path.mkdir(parents=True, exist_ok=True)
    for samples in path.glob("*.db"):
        samples.unlink(missing_ok=True)
    return {**env, "PROMETHEUS_MULTIPROC_DIR": str(path)}
