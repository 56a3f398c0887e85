"""Celery's side of the broker: Redis (the default) or RabbitMQ (`MUMA_BROKER_URL=amqp://…`).

Invariants: MUMA's message priorities read as kombu's Redis transport reads them, 0 taken
first and 9 last, on either broker. RabbitMQ takes the highest number first, so on an
AMQP broker each published priority is mirrored (9 - p) into queues declared with
`x-max-priority` 9, and a retry's priority, read back from its delivery, is mirrored back
before it is published again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery.app.amqp import AMQP
from kombu.utils.objects import cached_property

from memory.clients.broker import is_amqp

MAX_PRIORITY = 9
DEFAULT_PRIORITY = 6


def mirrored(priority: int | None) -> int:
    """An AMQP priority for a MUMA priority, and back (the mapping is its own inverse)."""
    value = DEFAULT_PRIORITY if priority is None else priority
    return MAX_PRIORITY - min(max(int(value), 0), MAX_PRIORITY)


def broker_settings(url: str) -> dict[str, Any]:
    """The Celery settings that depend on the broker's kind."""
    if is_amqp(url):
        return {
            "task_queue_max_priority": MAX_PRIORITY,
            # A publish waits for the broker's confirm: an acknowledged capture's message
            # is in a queue, not in a socket buffer.
            "broker_transport_options": {"confirm_publish": True},
        }
    return {
        # socket_timeout: a publish to a Redis that stopped answering (frozen, a dead
        # peer behind NAT) fails after 2 s instead of waiting forever (kombu's default);
        # a capture is stored first, so it is acknowledged and the sweep publishes it.
        # Above brpop_timeout (1 s), so a consumer's BRPOP is never cut short.
        "broker_transport_options": {
            "visibility_timeout": 3600,
            "priority_steps": [0, 3, 6, 9],
            "socket_timeout": 2,
            "socket_connect_timeout": 2,
        },
    }


def muma_priority(delivered: int | None, url: str) -> int | None:
    """MUMA's priority of a message delivered with `delivered` by the broker at `url`."""
    if delivered is None or not is_amqp(url):
        return delivered
    return mirrored(delivered)


class BrokerAMQP(AMQP):  # type: ignore[misc]
    """Celery's publishing, with each message's priority mirrored on an AMQP broker."""

    @cached_property
    def send_task_message(self) -> Callable[..., Any]:
        send: Callable[..., Any] = self._create_task_sender()
        if not is_amqp(self.app.conf.broker_url):
            return send

        def send_mirrored(producer: Any, name: str, message: Any, **options: Any) -> Any:
            options["priority"] = mirrored(options.get("priority"))
            return send(producer, name, message, **options)

        return send_mirrored
