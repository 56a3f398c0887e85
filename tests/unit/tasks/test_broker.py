"""The broker's settings and MUMA's priorities on either broker (no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.clients.broker import UNREACHABLE_BROKER, broker_url, is_amqp
from memory.config import load_settings
from memory.errors import ConfigError
from tasks.app import celery_config
from tasks.broker import MAX_PRIORITY, mirrored, muma_priority

AMQP = "amqp://guest:guest@127.0.0.1:5672/muma"


def test_mirroring_keeps_the_order_and_undoes_itself() -> None:
    assert [mirrored(p) for p in (0, 3, 6, 9)] == [9, 6, 3, 0]
    assert all(mirrored(mirrored(p)) == p for p in range(MAX_PRIORITY + 1))
    assert mirrored(None) == 3  # the default priority, 6
    assert muma_priority(9, AMQP) == 0 and muma_priority(9, "redis://h/0") == 9
    assert muma_priority(None, AMQP) is None


def test_the_broker_is_redis_unless_named(tmp_path: Path) -> None:
    redis_only = load_settings(home=tmp_path, redis_url="redis://127.0.0.1:6379/3")
    assert broker_url(redis_only) == "redis://127.0.0.1:6379/3"
    rabbit = load_settings(home=tmp_path, redis_url="redis://h:6379/0", broker_url=AMQP)
    assert broker_url(rabbit) == AMQP and is_amqp(AMQP) and not is_amqp("rediss://h/0")
    # Nothing known and nothing running: publishing fails at once, the sweep republishes.
    assert broker_url(load_settings(home=tmp_path, redis_url=None)) == UNREACHABLE_BROKER


def test_each_broker_gets_its_own_transport_settings(tmp_path: Path) -> None:
    rabbit = celery_config(load_settings(home=tmp_path, broker_url=AMQP))
    assert rabbit["broker_url"] == AMQP and rabbit["task_queue_max_priority"] == MAX_PRIORITY
    assert "visibility_timeout" not in rabbit["broker_transport_options"]
    redis = celery_config(load_settings(home=tmp_path, redis_url="redis://h:6379/0"))
    assert "task_queue_max_priority" not in redis
    assert redis["broker_transport_options"]["priority_steps"] == [0, 3, 6, 9]


def test_a_broker_url_of_another_kind_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="broker_url"):
        load_settings(home=tmp_path, broker_url="kafka://h:9092")
