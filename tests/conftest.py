"""Session fixtures: embedded PostgreSQL (pgvector), a real Redis, a real Celery worker.

Set-up happens at import time only for what later imports need (MUMA_HOME and the Redis
URL, read when `tasks.app` is imported); PostgreSQL starts on first use. Tests isolate
themselves by using fresh tenant and user ids, never by sharing rows.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_HOME = Path(tempfile.mkdtemp(prefix="muma-test-"))
CLAIM_KEY = "muma:test-session"


def claim_local_redis_db() -> str | None:
    """A database index of the local Redis that no other test session is using.

    Concurrent test sessions on one machine would otherwise consume each other's Celery
    tasks; each claims its own index (1-15) with a key that expires after two hours.
    """
    import redis

    for index in range(1, 16):
        url = f"redis://127.0.0.1:6379/{index}"
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
            if client.set(CLAIM_KEY, str(os.getpid()), nx=True, ex=7200):
                _CLAIMED.append(client)
                _clear_except_claim(client)  # a killed session's queued tasks are not ours
                return url
        except redis.RedisError:
            return None
    return None


def _clear_except_claim(client: Any) -> None:
    for key in client.scan_iter():
        if key != CLAIM_KEY.encode():
            client.delete(key)


_CLAIMED: list = []


def _embedded_redis_url() -> str:
    from memory.runtime.embedded import start_redis

    process, url = start_redis(TEST_HOME)
    _CHILDREN.append(process)
    return url


_CHILDREN: list[subprocess.Popen[bytes]] = []
os.environ["MUMA_HOME"] = str(TEST_HOME)
os.environ.pop("MUMA_DATABASE_URL", None)
os.environ["MUMA_REDIS_URL"] = claim_local_redis_db() or _embedded_redis_url()
os.environ.setdefault("MUMA_ACTIVATION__NOISE_ENABLED", "false")
# One database holds every test's episodes, many left queued on purpose (idle brokers):
# their sum is no backlog of a real service. test_capture_backlog sets its own limit.
os.environ.setdefault("MUMA_PIPELINE__MAX_BACKLOG", "0")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--keep-home", action="store_true", help="keep the test MUMA_HOME (logs)")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for client in _CLAIMED:
        client.flushdb()
    for process in _CHILDREN:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
    from memory.runtime.embedded import stop_postgres

    stop_postgres(TEST_HOME)
    if session.config.getoption("--keep-home"):
        print(f"\nkept {TEST_HOME}")
    else:
        shutil.rmtree(TEST_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    url = os.environ["MUMA_REDIS_URL"]
    _clear_except_claim(redis.Redis.from_url(url))
    return url


@pytest.fixture(scope="session")
def database_url() -> str:
    """The embedded PostgreSQL 18 + pgvector, migrated to head, shared by the session."""
    from memory.config import reset_settings_cache
    from memory.db import dispose_engines
    from memory.ops.migrations import upgrade_database
    from memory.runtime.embedded import start_postgres

    url = start_postgres(TEST_HOME, stop_at_exit=True)
    os.environ["MUMA_DATABASE_URL"] = url
    reset_settings_cache()
    dispose_engines()
    upgrade_database()
    return url


@pytest.fixture()
def scratch_database(database_url: str) -> Iterator[str]:
    """A database of its own on the session's server (SQLAlchemy URL), not migrated, for
    tests that walk migrations up and down; dropped afterwards."""
    import psycopg

    from memory.db_url import sqlalchemy_url

    name = f"scratch_{uuid.uuid4().hex[:8]}"
    admin = database_url.replace("/muma?", "/postgres?")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield sqlalchemy_url(database_url.replace("/muma?", f"/{name}?"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture()
def tenant_id() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture()
def user_id() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


@pytest.fixture()
def session_id() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def make_token(role: str, tenant: str, user: str | None = None) -> str:
    from memory.access.tokens import create_token
    from memory.db import session_scope

    with session_scope() as session:
        _, secret = create_token(session=session, role=role, tenant_id=tenant, user_id=user)
    return secret


@pytest.fixture()
def tokens(database_url: str, tenant_id: str) -> dict[str, str]:
    return {role: make_token(role, tenant_id) for role in ("agent", "viewer", "operator", "admin")}


@pytest.fixture(scope="session")
def api_client(database_url: str, redis_url: str):  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from memory.api.app import create_app

    with TestClient(create_app()) as client:
        yield client


def worker_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(extra)
    return env


def start_worker(
    env: dict[str, str], *, name: str, concurrency: int = 2
) -> subprocess.Popen[bytes]:
    """A real Celery worker process on every queue."""
    from tests.support.lifeline import lifeline_argv
    from tests.support.stack import worker_argv

    log = open(TEST_HOME / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        lifeline_argv(worker_argv(f"{name}@%h", concurrency)),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for_worker(name: str, timeout: float = 60, app: Any = None) -> None:
    from tests.support.stack import wait_for_worker as wait

    try:
        wait(name, timeout, app=app)
    except RuntimeError:
        log = TEST_HOME / f"{name}.log"
        raise RuntimeError(f"worker {name} did not start; see {log}") from None


def stop_process_group(process: subprocess.Popen[bytes], sig: int = 15) -> None:
    """Warm shutdown of the group leader (it stops its pool), then kill what is left."""
    try:
        process.send_signal(sig)
        process.wait(15)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 9)
    process.wait()


@pytest.fixture(scope="session")
def celery_worker(database_url: str, redis_url: str) -> Iterator[str]:
    name = f"test-{uuid.uuid4().hex[:6]}"
    process = start_worker(worker_env(MUMA_DATABASE_URL=database_url), name=name)
    try:
        wait_for_worker(name)
        yield name
    finally:
        stop_process_group(process)


_SPARE_DBS = iter(range(15, 1, -1))  # embedded Redis: one database per LLM worker
_SPARE_REDIS: list[str] = []


def worker_broker_url(redis_url: str) -> str:
    """A Redis database no other worker consumes from: a claimed index of the local Redis,
    else one of an embedded Redis. Never an unclaimed index of the local Redis: another
    test session on the machine may hold it, and its worker would take this one's tasks."""
    claimed = claim_local_redis_db()
    if claimed is not None:
        return claimed
    if not redis_url.startswith("redis://127.0.0.1:6379/"):
        return f"{redis_url.rsplit('/', 1)[0]}/{next(_SPARE_DBS)}"
    if not _SPARE_REDIS:
        _SPARE_REDIS.append(_embedded_redis_url())
    return f"{_SPARE_REDIS[0].rsplit('/', 1)[0]}/{next(_SPARE_DBS)}"


@contextlib.contextmanager
def llm_worker(
    database_url: str, redis_url: str, chat: Any, name: str, **settings: str
) -> Iterator[tuple[Any, Any]]:
    """A real worker whose LLM is a local fake model server answering with `chat`, on a
    broker database of its own (the suite's deterministic worker never takes its tasks);
    yields (the server, a Celery app that publishes to that worker). `settings` are
    extra environment variables for the worker."""
    from memory.config import load_settings
    from tasks.app import create_celery_app
    from tests.support.fake_openai import FakeOpenAI

    broker = worker_broker_url(redis_url)
    with FakeOpenAI(chat=chat) as server:
        env = worker_env(
            MUMA_DATABASE_URL=database_url,
            MUMA_REDIS_URL=broker,
            MUMA_LLM__BASE_URL=server.base_url,
            MUMA_LLM__API_KEY="sk-test",
            **settings,
        )
        name = f"{name}-{uuid.uuid4().hex[:6]}"
        process = start_worker(env, name=name, concurrency=1)
        producer = create_celery_app(load_settings(redis_url=broker))
        try:
            wait_for_worker(name, app=producer)
            yield server, producer
        finally:
            stop_process_group(process)
