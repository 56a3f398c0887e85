"""Health checks shared by /healthz, /v1/system/status and `muma doctor`."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from sqlalchemy import text

from memory.clients.broker import PRIORITY_SUFFIXES, amqp_queue_depths, broker_url, is_amqp
from memory.clients.redis import get_redis, get_redis_at
from memory.config import get_settings
from memory.db import get_engine

QUEUE_NAMES = ("ingest", "embed", "llm", "maintenance")
# How long a worker ping waits for answers.
WORKER_PING_SECONDS = 1.0


def _timed(check) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    try:
        detail = check()
        ok = True
    except Exception as exc:  # a health check reports every failure instead of raising
        detail, ok = f"{type(exc).__name__}: {exc}", False
    result: dict[str, Any] = {"ok": ok, "ms": round((time.perf_counter() - started) * 1000, 1)}
    if detail:
        result["detail"] = detail
    return result


def check_database() -> dict[str, Any]:
    def probe() -> str:
        with get_engine().connect() as conn:
            version = conn.execute(
                text("SELECT extversion FROM pg_extension WHERE extname='vector'")
            ).scalar()
        return f"pgvector {version}" if version else "pgvector missing (run `muma db upgrade`)"

    return _timed(probe)


def check_redis() -> dict[str, Any]:
    return _timed(lambda: "pong" if get_redis().ping() else "no pong")


def check_workers(
    ping: Callable[..., list[Any] | None], *, count_all: bool = True
) -> dict[str, Any]:
    """Whether a Celery worker answers `ping` (the app's `control.ping`: this module takes
    it rather than importing the tasks). With `count_all` (`muma doctor`) it waits the
    whole timeout to count every worker; without (`/healthz`) it returns on the first
    reply: a broadcast cannot know how many will answer, so counting always costs the
    timeout, which made every health probe take a second against probes' usual 1 s limit."""

    def probe() -> str:
        if count_all:
            replies = ping(timeout=WORKER_PING_SECONDS)
        else:
            replies = ping(timeout=WORKER_PING_SECONDS, limit=1)
        if not replies:
            raise RuntimeError("no Celery worker answered")
        return f"{len(replies)} worker(s)" if count_all else "a worker answered"

    return _timed(probe)


def queue_depths() -> dict[str, int | None]:
    """Messages waiting per queue (None when the broker cannot be reached)."""
    url = broker_url(get_settings())
    try:
        if is_amqp(url):
            return amqp_queue_depths(url, QUEUE_NAMES)
        pipe = get_redis_at(url).pipeline(transaction=False)
        for name in QUEUE_NAMES:
            for suffix in PRIORITY_SUFFIXES:
                pipe.llen(name + suffix)
        lengths = iter(pipe.execute())
        return {name: sum(next(lengths) for _ in PRIORITY_SUFFIXES) for name in QUEUE_NAMES}
    except Exception:  # status must render even when Redis is down
        return {name: None for name in QUEUE_NAMES}


# /healthz answers within this, whatever hangs: a frozen PostgreSQL held the pool's
# connection wait (40 s), a stalled Redis its socket timeout.
HEALTH_DEADLINE_SECONDS = 0.9
# Checks still stuck from earlier probes keep their threads; new probes get others.
_CHECKS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="health")


def run_checks(
    checks: dict[str, Callable[[], dict[str, Any]]], deadline: float = HEALTH_DEADLINE_SECONDS
) -> dict[str, dict[str, Any]]:
    """Each check's result, run side by side; a check with no answer by `deadline` is
    reported as failed (it goes on in the background and is not waited for)."""
    futures = {name: _CHECKS.submit(check) for name, check in checks.items()}
    wait(futures.values(), timeout=deadline)
    late = {"ok": False, "ms": round(deadline * 1000, 1), "detail": "no answer in time"}
    return {name: f.result() if f.done() else dict(late) for name, f in futures.items()}
