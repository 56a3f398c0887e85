"""`muma up`: the embedded default (or external servers) plus supervised service processes."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from memory.config import Settings, reset_settings_cache
from memory.runtime.api_process import api_command, api_environment, usable_cores
from memory.runtime.credentials import ensure_credentials
from memory.runtime.embedded import (
    free_port,
    port_is_free,
    postgres_running,
    read_runtime_file,
    redis_argv,
    restart_postgres,
    start_postgres,
    stop_postgres,
    wait_for_redis,
    write_runtime_file,
)
from memory.runtime.supervisor import ProcessSpec, Reporter, Supervisor, Watch


@dataclass(frozen=True)
class UpOptions:
    port: int = 8787
    flower_port: int = 5555
    workers: int = 1
    host: str = "127.0.0.1"
    # API processes: one runs Python on one core at a time, so one per core.
    api_workers: int = field(default_factory=usable_cores)


def _redis_spec(home: Path, port: int, env: dict[str, str]) -> ProcessSpec:
    data_dir = home / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = redis_argv(data_dir, port)
    return ProcessSpec("redis", argv, env, home / "logs" / "redis.log")


def service_specs(options: UpOptions, env: dict[str, str], logs: Path) -> list[ProcessSpec]:
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "tasks.app"]
    api_env = api_environment(env, Path(env["MUMA_HOME"]))
    api = api_command(options.host, options.port, options.api_workers)
    return [
        ProcessSpec("api", api, api_env, logs / "api.log"),
        ProcessSpec(
            "worker",
            [
                *celery,
                "worker",
                "-Q",
                "ingest,embed,llm,maintenance",
                "-c",
                str(options.workers),
                "--loglevel",
                "INFO",
                "-n",
                f"muma-{os.getpid()}@%h",
            ],
            env,
            logs / "worker.log",
        ),
        ProcessSpec(
            "beat",
            [
                *celery,
                "beat",
                "--loglevel",
                "INFO",
                "-s",
                str(Path(env["MUMA_HOME"]) / "celerybeat-schedule"),
            ],
            env,
            logs / "beat.log",
        ),
        ProcessSpec(
            "flower",
            [*celery, "flower", f"--port={options.flower_port}", f"--address={options.host}"],
            env,
            logs / "flower.log",
        ),
    ]


def run_up(settings: Settings, options: UpOptions, report: Reporter) -> int:
    """Start everything, block until SIGINT/SIGTERM, then stop every child. Returns an exit code."""
    home = settings.home
    home.mkdir(parents=True, exist_ok=True)
    if read_runtime_file(home):
        report(f"another `muma up` is already running on {home}")
        return 1
    taken = [
        f"{flag} {port}"
        for flag, port in (("--port", options.port), ("--flower-port", options.flower_port))
        if not port_is_free(options.host, port)
    ]
    if taken:
        report(f"port in use on {options.host}: {', '.join(taken)}; another service holds it")
        report("choose free ports, e.g. `muma up --port 8788 --flower-port 5556`")
        return 1
    env = {**os.environ, "MUMA_HOME": str(home)}
    pre: list[ProcessSpec] = []
    if settings.embedded_database:
        report(f"starting embedded PostgreSQL in {home / 'pg'}")
        env["MUMA_DATABASE_URL"] = start_postgres(home, stop_at_exit=False)
    if settings.embedded_redis:
        redis_port = free_port()
        env["MUMA_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        pre.append(_redis_spec(home, redis_port, env))
    os.environ.update({k: env[k] for k in ("MUMA_DATABASE_URL", "MUMA_REDIS_URL") if k in env})
    reset_settings_cache()
    watches = []
    if settings.embedded_database:
        watches.append(
            Watch(
                "PostgreSQL",
                alive=lambda: postgres_running(home),
                restart=lambda: restart_postgres(home),
            )
        )
    specs = pre + service_specs(options, env, home / "logs")
    supervisor = Supervisor(specs, report=report, watches=watches)
    stop_requested = False

    def _request_stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, _request_stop)
    signal.signal(signal.SIGTERM, _request_stop)
    try:
        _start(supervisor, pre, env, settings, options, report)
        supervisor.run(lambda: stop_requested)
    finally:
        report("stopping…")
        supervisor.stop()
        (home / "runtime.json").unlink(missing_ok=True)
        if settings.embedded_database:
            stop_postgres(home)
        report("stopped")
    return 0


STARTUP_REBUILD_SECONDS = 60.0
API_READY_SECONDS = 120.0


def _wait_for_api(supervisor: Supervisor, api_url: str, report: Reporter, log: Path) -> None:
    """Return once the API answers /healthz, so that the URLs printed next work when they
    are printed; the supervisor restarts an API that exits meanwhile."""
    import httpx

    deadline = time.monotonic() + API_READY_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{api_url}/healthz", timeout=2).status_code == 200:
                return
        supervisor.poll()
        time.sleep(0.25)
    report(f"the API is not answering {api_url}/healthz yet; see {log}")


def _continue_rebuild(report: Reporter) -> None:
    """Hand the rest of the derived-data rebuild to the workers (the hourly beat entry
    takes it up too, should this message be lost)."""
    from tasks.maintenance import rebuild_derived as rebuild_task

    try:
        rebuild_task.apply_async(retry=False)
        report("the workers rebuild the remaining notes in the background")
    except Exception as exc:  # kombu raises several types for a broker not up yet
        report(f"the hourly maintenance rebuilds the remaining notes ({exc})")


def _start(
    supervisor: Supervisor,
    pre: list[ProcessSpec],
    env: dict[str, str],
    settings: Settings,
    options: UpOptions,
    report: Reporter,
) -> None:
    from memory.ops.migrations import derived_left, rebuild_derived, upgrade_database

    supervisor.start({spec.name for spec in pre})
    if pre:
        # Generous: on a loaded machine the embedded Redis can take seconds to answer.
        wait_for_redis(env["MUMA_REDIS_URL"], timeout=60)
    report("applying migrations")
    upgrade_database()
    # A large store's rebuild takes hours (100,000 notes: benchmarks/README.md, "The
    # upgrade's rebuild"): the service starts after a minute of it and the workers finish.
    rebuild_derived(report, max_seconds=STARTUP_REBUILD_SECONDS)
    supervisor.start()
    if derived_left():
        _continue_rebuild(report)
    api_url = f"http://{options.host}:{options.port}"
    credentials, created = ensure_credentials(
        settings.credentials_path, tenant_id=settings.tenant_id, api_url=api_url
    )
    write_runtime_file(
        settings.home,
        {
            "pid": os.getpid(),
            "started_at": time.time(),
            "database_url": env.get("MUMA_DATABASE_URL", settings.database_url),
            "redis_url": env.get("MUMA_REDIS_URL", settings.redis_url),
            # The children see both URLs set: what they point at is said here.
            "database": "embedded" if settings.embedded_database else "external",
            "redis": "embedded" if settings.embedded_redis else "external",
            "api_url": api_url,
            "flower_url": f"http://{options.host}:{options.flower_port}",
        },
    )
    _wait_for_api(supervisor, api_url, report, settings.home / "logs" / "api.log")
    report(f"Database   {'embedded PostgreSQL' if settings.embedded_database else 'external'}")
    report(f"Redis      {'embedded' if settings.embedded_redis else 'external'}")
    report(f"API        {api_url}   (OpenAPI: {api_url}/docs)")
    report(f"Dashboard  {api_url}/dashboard")
    report(f"Flower     http://{options.host}:{options.flower_port}")
    verb = "created" if created else "reused"
    report(f"Tokens     {settings.credentials_path} ({verb}; tenant {credentials['tenant_id']})")
    report(f"Logs       {settings.home / 'logs'}")
    report("Press Ctrl-C to stop.")
