"""A virtual host of its own on the machine's RabbitMQ (127.0.0.1:5672, guest/guest)."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """An AMQP URL of a fresh virtual host, deleted afterwards; skips without RabbitMQ."""
    vhost = f"muma-test-{uuid.uuid4().hex[:8]}"
    try:
        subprocess.run(["rabbitmqctl", "add_vhost", vhost], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no RabbitMQ (rabbitmqctl) on this machine")
    try:
        grant = ["rabbitmqctl", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"]
        subprocess.run(grant, check=True, capture_output=True)
        yield f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", vhost], capture_output=True)
