"""The production shape, run for real: the `Procfile`'s roles as separate processes on
external servers, the way a platform or compose runs them.

`release` migrates, then two `web` processes on two ports, one `worker` per queue
(ingest, embed, llm, maintenance), `beat` and `flower` start from the Procfile's own
command lines. Turns are captured through both web processes, searched, and one user's
sleep cycle runs on the maintenance worker. Then the ingest worker and one web process are
SIGKILLed while more turns arrive: the other web process keeps answering, the worker comes
back as a platform restarts it, and every acknowledged turn is settled, none lost.

Servers: the machine's own PostgreSQL 15 (pgvector built into it by
`scripts/portable-pgvector.sh --system 15`, which `make test` runs) and Redis, the same with
the machine's RabbitMQ as the broker (a virtual host of its own), and the embedded
PostgreSQL 18 run as an external server; each with a Redis database of its own.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from memory.runtime.embedded import free_port, start_postgres, stop_postgres
from tests.conftest import worker_broker_url
from tests.support.helpers import wait_until
from tests.support.lifeline import lifeline_argv
from tests.support.rabbitmq import rabbitmq_vhost

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
QUEUES = ("ingest", "embed", "llm", "maintenance")
MACHINE_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
SETTLED_SQL = "SELECT count(*) FROM episodes WHERE id = ANY(%s::uuid[]) AND status = ANY(%s)"
FACTS = [
    "Dana's locker at the climbing gym is number 4417.",
    "The staging cluster for project Heron runs in Frankfurt.",
    "Mika is allergic to hazelnuts and carries an epinephrine pen.",
    "The band rehearses every Thursday at the old fire station.",
    "Our wifi password at the cabin is written inside the fuse box door.",
    "Priya's flight to Osaka leaves on the ninth of March.",
]


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(
        (name.strip(), command.strip())
        for name, _, command in (line.partition(":") for line in lines)
        if command and not name.startswith("#")
    )


def worker_command(command: str, queue: str) -> str:
    """The Procfile's worker, on one queue under a node name of its own, one process."""
    argv = shlex.split(command)
    argv[argv.index("-Q") + 1] = queue
    return shlex.join([*argv, "-n", f"{queue}@%h", "--concurrency", "1"])


def machine_postgres() -> str | None:
    """A fresh database on the machine's PostgreSQL with pgvector, or None."""
    try:
        with psycopg.connect(MACHINE_ADMIN, autocommit=True, connect_timeout=2) as conn:
            found = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if found is None:
                return None
            name = f"muma_shape_{uuid.uuid4().hex[:8]}"
            conn.execute(f'CREATE DATABASE "{name}"')
            conn.execute(f'ALTER DATABASE "{name}" OWNER TO postgres')
    except psycopg.OperationalError:
        return None
    return MACHINE_ADMIN.rsplit("/", 1)[0] + f"/{name}"


@contextlib.contextmanager
def external_postgres(kind: str, home: Path) -> Iterator[str]:
    if kind == "embedded":
        yield start_postgres(home / "server", stop_at_exit=True)
        stop_postgres(home / "server")
        return
    url = machine_postgres()
    if url is None:
        pytest.skip("no PostgreSQL with pgvector on 127.0.0.1:5432: run make test")
    try:
        yield url
    finally:
        with psycopg.connect(MACHINE_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


class Shape:
    """The Procfile's roles as processes of their own, each in its own process group."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home, self.env, self.roles = home, env, procfile()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def spawn(self, name: str, command: str, **env: str) -> subprocess.Popen[bytes]:
        log = open(self.home / f"{name}.log", "ab")  # noqa: SIM115 - lives with the process
        process = subprocess.Popen(
            lifeline_argv(["bash", "-c", f"exec {command}"]),
            cwd=ROOT,
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def log(self, name: str, tail: int = 3000) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")[-tail:]

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait()

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def muma(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["muma", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(params=["machine", "machine+rabbitmq", "embedded"])
def shape(request: pytest.FixtureRequest, redis_url: str, tmp_path: Path) -> Iterator[Shape]:
    servers, _, broker = request.param.partition("+")
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(external_postgres(servers, tmp_path))
        brokers = {"MUMA_BROKER_URL": stack.enter_context(rabbitmq_vhost())} if broker else {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MUMA_", "PYTEST"))}
        env.update(
            PATH=f"{ROOT / '.venv' / 'bin'}:{env['PATH']}",
            MUMA_HOME=str(tmp_path / "home"),
            MUMA_DATABASE_URL=database_url,
            MUMA_REDIS_URL=worker_broker_url(redis_url),
            # A turn whose worker died is published again after this long (default 60 s).
            MUMA_PIPELINE__STUCK_AFTER_SECONDS="10",
            FLOWER_BASIC_AUTH="ops:shape-test",
            **brokers,
        )
        shape = Shape(tmp_path, env)
        try:
            yield shape
        finally:
            shape.stop()


def capture(url: str, token: str, user: str, facts: list[str]) -> list[str]:
    turns = [
        {"user_id": user, "agent_id": "main", "session_id": "s1", "role": "user", "content": f}
        for f in facts
    ]
    headers = {"Authorization": f"Bearer {token}"}
    sent = httpx.post(f"{url}/v1/episodes", json={"episodes": turns}, headers=headers, timeout=30)
    assert sent.status_code in (200, 202), sent.text
    return sent.json()["episode_ids"]


def settled(database_url: str, ids: list[str]) -> int:
    done = ["done", "failed"]  # failed ones are counted apart
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(SETTLED_SQL, (ids, done)).fetchone()
    return row[0] if row else 0


def test_the_procfiles_roles_on_external_servers_lose_nothing(shape: Shape) -> None:
    env, roles = shape.env, shape.roles
    release = subprocess.run(
        ["bash", "-c", roles["release"]], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert release.returncode == 0, release.stdout + release.stderr
    token = muma(env, "tokens", "create", "--role", "agent").strip().splitlines()[-1]
    ports = {"web1": free_port(), "web2": free_port()}
    for name, port in ports.items():
        shape.spawn(name, roles["web"], PORT=str(port))
    for queue in QUEUES:
        shape.spawn(f"worker-{queue}", worker_command(roles["worker"], queue))
    shape.spawn("beat", roles["beat"])
    flower_port = free_port()
    shape.spawn("flower", roles["flower"].replace("--port=5555", f"--port={flower_port}"))
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    for name, url in urls.items():
        wait_until(lambda u=url: _healthy(u), timeout=90)  # type: ignore[misc]
        assert shape.processes[name].poll() is None, shape.log(name)

    user = f"u-{uuid.uuid4().hex[:6]}"
    first = capture(urls["web1"], token, user, FACTS[:3]) + capture(
        urls["web2"], token, user, FACTS[3:4]
    )
    db = env["MUMA_DATABASE_URL"]
    wait_until(lambda: settled(db, first) == len(first), timeout=180)
    headers = {"Authorization": f"Bearer {token}"}
    found = httpx.post(
        f"{urls['web2']}/v1/search",
        json={"user_id": user, "agent_id": "main", "query": "Which locker is Dana's?"},
        headers=headers,
        timeout=30,
    )
    assert found.status_code == 200, found.text
    assert "4417" in found.json()["results"][0]["content"]

    sleep = httpx.post(
        f"{urls['web1']}/v1/consolidate", json={"user_id": user}, headers=headers, timeout=30
    )
    assert sleep.status_code == 202, sleep.text
    wait_until(lambda: _sleep_cycles(db, user) == 1, timeout=120)

    # A worker dies with turns in hand and a web process dies; the rest keeps serving; the
    # worker is restarted, as a platform restarts a process, and beat republishes the turns.
    later = capture(urls["web2"], token, user, FACTS[4:])
    shape.kill("worker-ingest")
    shape.kill("web1")
    assert httpx.get(f"{urls['web2']}/healthz", timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{urls['web1']}/healthz", timeout=5)
    shape.spawn("worker-ingest", worker_command(roles["worker"], "ingest"))
    wait_until(lambda: settled(db, first + later) == len(first + later), timeout=180)
    with psycopg.connect(db, autocommit=True) as conn:
        failed = conn.execute("SELECT count(*) FROM episodes WHERE status = 'failed'").fetchone()
    assert failed == (0,)

    for name, process in shape.processes.items():
        assert name == "web1" or process.poll() is None, f"{name} exited: {shape.log(name)}"
    broker = "amqp://" if "MUMA_BROKER_URL" in env else "redis://"
    worker_log = shape.log("worker-embed", tail=10**6)
    assert f"Connected to {broker}" in worker_log, worker_log[-3000:]
    status = httpx.get(f"{urls['web2']}/v1/system/status", headers=headers, timeout=10).json()
    assert status["broker"] == ("rabbitmq" if broker == "amqp://" else "redis")
    assert status["database"] == status["redis"] == "external"
    # Flower answers only with its credentials.
    flower = f"http://127.0.0.1:{flower_port}/api/workers"
    wait_until(lambda: _answers(flower), timeout=60)
    assert httpx.get(flower, timeout=10).status_code == 401
    assert httpx.get(flower, auth=("ops", "shape-test"), timeout=10).status_code == 200


def _healthy(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    return False


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code in (200, 401)
    return False


def _sleep_cycles(database_url: str, user: str) -> int:
    query = "SELECT count(*) FROM events WHERE action = 'sleep.cycle' AND user_id = %s"
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(query, (user,)).fetchone()
    return row[0] if row else 0
