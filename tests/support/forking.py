"""Run an embedder in a forked child, as a Celery prefork worker would."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable

import numpy as np


def embed_in_forked_child(
    embed_one: Callable[[str], np.ndarray], text: str, *, timeout_seconds: float = 30
) -> np.ndarray | None:
    """The vector a forked child computes with `embed_one` (the parent's object, as the
    child inherits it), or None when the child hung or failed within the timeout."""
    size = embed_one(text).nbytes
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.write(write_end, embed_one(text).tobytes())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    try:
        ready, _, _ = select.select([read_end], [], [], timeout_seconds)
        while ready and len(data) < size and (chunk := os.read(read_end, 65536)):
            data += chunk
    finally:
        os.close(read_end)
        if len(data) < size:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return np.frombuffer(data, dtype=np.float32) if len(data) == size else None
