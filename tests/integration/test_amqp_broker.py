"""Tasks over a real RabbitMQ (MUMA_BROKER_URL=amqp://…): MUMA's priorities keep their
meaning, 0 taken first, as on Redis; a retry keeps its task's priority; the queue depths
that /v1/system/status, /metrics and the backlog guard read come from RabbitMQ."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery.app.task import Context
from kombu import Connection

from memory.clients.broker import amqp_queue_depths
from memory.config import load_settings
from tasks.app import create_celery_app
from tasks.pipeline import PRIORITY_DECIDE, PRIORITY_EXTRACT
from tests.support.rabbitmq import rabbitmq_vhost

pytestmark = pytest.mark.integration

EXTRACT, DECIDE = "tasks.pipeline.process_episodes", "tasks.pipeline.decide"


@pytest.fixture()
def rabbit(tmp_path: Path) -> Iterator[tuple[str, Celery]]:
    with rabbitmq_vhost() as url:
        app = create_celery_app(load_settings(home=tmp_path, broker_url=url))
        try:
            yield url, app
        finally:
            app.close()


def _drain(url: str, queue: str) -> list[tuple[str, int]]:
    """(task name, AMQP priority) of each message in `queue`, in delivery order."""
    got = []
    with Connection(url) as connection:
        channel = connection.channel()
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            got.append((message.headers["task"], message.properties["priority"]))
    return got


def test_a_decide_published_after_extracts_is_taken_first(rabbit: tuple[str, Celery]) -> None:
    url, app = rabbit
    for _ in range(3):
        app.send_task(EXTRACT, args=([],), priority=PRIORITY_EXTRACT)
    app.send_task(DECIDE, args=([],), priority=PRIORITY_DECIDE)
    deadline = time.monotonic() + 10
    while amqp_queue_depths(url, ("ingest",))["ingest"] != 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert amqp_queue_depths(url, ("ingest", "embed")) == {"ingest": 4, "embed": 0}
    delivered = _drain(url, "ingest")
    # MUMA's 0 (first) is RabbitMQ's 9 (first); extracts, 6, travel as 3.
    assert delivered == [(DECIDE, 9), (EXTRACT, 3), (EXTRACT, 3), (EXTRACT, 3)]


def test_a_retry_is_published_with_its_tasks_priority(rabbit: tuple[str, Celery]) -> None:
    url, app = rabbit
    task: Any = app.tasks[DECIDE]
    # As a worker sees a decide delivered by RabbitMQ: its priority as RabbitMQ carried it.
    delivery = {"exchange": "", "routing_key": "ingest", "priority": 9}
    request = Context(id="t-1", args=[[]], kwargs={}, delivery_info=delivery, hostname="w")
    retry = task.signature_from_request(request)
    assert retry.options["priority"] == PRIORITY_DECIDE
    retry.apply_async()
    assert _drain(url, "ingest") == [(DECIDE, 9)]
