"""An erasure cut short resumes and ends with the same report: stopped after some committed
steps, killed in the middle of a step (its transaction rolled back whole), and with a
real worker's process killed while the task runs (acks_late redelivers it)."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from memory.config import load_settings
from memory.db import session_scope
from memory.erasure import steps as steps_module
from memory.erasure.runner import run_erasure
from memory.erasure.steps import Step
from memory.erasure.users import get_erasure, start_erasure
from tasks.app import create_celery_app
from tests.conftest import (
    start_worker,
    stop_process_group,
    wait_for_worker,
    worker_broker_url,
    worker_env,
)
from tests.integration.test_user_erasure_support import bulk_user, counts, marker, snapshot
from tests.support.helpers import wait_until

pytestmark = pytest.mark.integration


class StopError(Exception):
    """Raised from a step callback: the runner's process 'dies' between two steps."""


def _start(tenant_id: str, user_id: str) -> uuid.UUID:
    with session_scope() as session:
        erasure, new = start_erasure(
            session=session, tenant_id=tenant_id, user_id=user_id, requested_by="test"
        )
        assert new
        return erasure.id


def _same_report(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "seconds"}


def test_an_erasure_cut_short_resumes_to_the_same_report(
    database_url: str, redis_url: str, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, carol, bob = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("alice", "carol", "bob"))
    for user in (alice, carol, bob):
        bulk_user(tenant_id, user, 300, marker(user[:1]))
    found = counts(tenant_id, alice)
    assert found["notes"] == found["note_vectors"] == found["note_window_vectors"] == 300
    bob_before = snapshot(tenant_id, bob)

    # Uninterrupted, for the report to compare with.
    whole = run_erasure(_start(tenant_id, carol), limit=40)
    assert whole.status == "done" and whole.report is not None

    erasure_id = _start(tenant_id, alice)
    seen: list[Step] = []

    def stop_after_four(step: Step) -> None:
        seen.append(step)
        if len(seen) == 4:
            raise StopError

    with pytest.raises(StopError):
        run_erasure(erasure_id, limit=40, on_step=stop_after_four)
    midway = counts(tenant_id, alice)
    assert 0 < midway["episodes"] < 300 or 0 < midway["notes"] < 300

    real = steps_module.delete_batch

    def dies_after_deleting(**kwargs: Any) -> dict[str, int]:
        real(**kwargs)
        raise RuntimeError("worker killed in the middle of a step")

    monkeypatch.setattr(steps_module, "delete_batch", dies_after_deleting)
    with pytest.raises(RuntimeError):
        run_erasure(erasure_id, limit=40)
    assert counts(tenant_id, alice) == midway  # the step's transaction was rolled back whole
    monkeypatch.undo()

    resumed = run_erasure(erasure_id, limit=40)
    assert resumed.status == "done" and resumed.report is not None
    assert _same_report(resumed.report) == _same_report(whole.report)
    assert {t: n for t, n in resumed.report["removed"].items() if t in found} == found
    assert not any(resumed.report["remaining"].values())
    assert not any(counts(tenant_id, alice).values())
    assert snapshot(tenant_id, bob) == bob_before
    # Running it again finds it done and changes nothing.
    assert run_erasure(erasure_id).status == "done"


@pytest.fixture()
def own_broker(database_url: str, redis_url: str) -> Iterator[tuple[str, Any]]:
    """A broker database no other worker of the session reads, and an app publishing to it."""
    broker = worker_broker_url(redis_url)
    producer = create_celery_app(load_settings(redis_url=broker))
    yield broker, producer


def _pool_children(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def test_a_killed_worker_s_erasure_is_delivered_again_and_finishes(
    database_url: str, tenant_id: str, own_broker: tuple[str, Any]
) -> None:
    broker, producer = own_broker
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    bulk_user(tenant_id, alice, 1500, marker("k"))
    found = counts(tenant_id, alice)
    erasure_id = _start(tenant_id, alice)
    name = f"erasure-{uuid.uuid4().hex[:6]}"
    worker = start_worker(
        worker_env(MUMA_DATABASE_URL=database_url, MUMA_REDIS_URL=broker), name=name, concurrency=1
    )
    try:
        wait_for_worker(name, app=producer)
        producer.send_task("tasks.erasure.erase", (str(erasure_id),), {"limit": 10})

        def removed_notes() -> int:
            with session_scope() as session:
                progress = get_erasure(session=session, erasure_id=erasure_id).progress
            return int(progress.get("removed", {}).get("notes", 0))

        wait_until(lambda: removed_notes() >= 100, timeout=120, interval=0.05)
        [child] = _pool_children(worker.pid)
        os.kill(child.pid, signal.SIGKILL)  # the pool process dies mid-task
        at_kill = removed_notes()
        assert at_kill < found["notes"], "the erasure finished before the kill"
        # No beat runs here: only the redelivered task can finish it.
        wait_until(lambda: _status(erasure_id) == "done", timeout=300, interval=0.2)
        assert all(c.pid != child.pid for c in _pool_children(worker.pid))
    finally:
        stop_process_group(worker)
    with session_scope() as session:
        report = get_erasure(session=session, erasure_id=erasure_id).report
    assert report is not None
    assert {t: n for t, n in report["removed"].items() if t in found} == found
    assert not any(report["remaining"].values())
    assert not any(counts(tenant_id, alice).values())


def _status(erasure_id: uuid.UUID) -> str:
    with session_scope() as session:
        return get_erasure(session=session, erasure_id=erasure_id).status


def test_beat_sends_an_erasure_whose_task_was_lost_again(
    database_url: str, celery_worker: str, tenant_id: str
) -> None:
    from sqlalchemy import update

    from memory.erasure.models import Erasure
    from memory.erasure.users import stalled_erasures
    from tasks.erasure import STALLED_SECONDS, resume_erasures

    alice = f"alice-{uuid.uuid4().hex[:6]}"
    bulk_user(tenant_id, alice, 20, marker("b"))
    erasure_id = _start(tenant_id, alice)  # started, its task never sent
    with session_scope() as session:
        assert erasure_id not in stalled_erasures(session=session, idle_seconds=STALLED_SECONDS)
        session.execute(
            update(Erasure)
            .where(Erasure.id == erasure_id)
            .values(progress=Erasure.progress.op("||")({"updated_at": "2020-01-01T00:00:00+00:00"}))
        )
    assert resume_erasures() >= 1  # run here; it sends `erase` to the session's worker
    wait_until(lambda: _status(erasure_id) == "done", timeout=120, interval=0.2)
    assert not any(counts(tenant_id, alice).values())
