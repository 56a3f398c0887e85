"""Which message broker carries the tasks, and how full its queues are.

Redis (MUMA_REDIS_URL, embedded by default) unless MUMA_BROKER_URL names another broker:
RabbitMQ (amqp://) or another Redis. Redis keeps working memory, events and the token
revocation counter whichever broker carries the tasks.
"""

from __future__ import annotations

from memory.config import Settings
from memory.errors import TransientError
from memory.runtime.embedded import resolve_redis_url

AMQP_SCHEMES = ("amqp", "amqps", "pyamqp")
# kombu's Redis transport keeps one list per priority step: "<queue>\x06\x16<priority>"
# (priority 0 uses the bare name); see tasks.broker.broker_settings.
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
# Where publishing fails at once when nothing is known yet: episodes stay `queued` and
# the sweep publishes them later.
UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"


def is_amqp(url: str) -> bool:
    return url.split("://", 1)[0].lower() in AMQP_SCHEMES


def broker_url(settings: Settings) -> str:
    if settings.broker_url:
        return settings.broker_url
    try:
        return resolve_redis_url(settings.redis_url, settings.home)
    except TransientError:
        return UNREACHABLE_BROKER


def amqp_queue_depths(url: str, names: tuple[str, ...]) -> dict[str, int | None]:
    """Messages ready in each queue of an AMQP broker; a queue not declared yet holds none
    (a publish declares its queue before it sends)."""
    from kombu import Connection

    depths: dict[str, int | None] = {}
    with Connection(url, connect_timeout=2) as connection:
        for name in names:
            channel = connection.channel()
            try:
                depths[name] = channel.queue_declare(queue=name, passive=True).message_count
            except connection.channel_errors:
                depths[name] = 0
            finally:
                channel.close()
    return depths
