"""The beat schedule is data from settings; the sleep fan-out picks tenants by local hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.config import load_settings
from memory.consolidation.cycle import tenant_due
from memory.errors import ConfigError
from schedules.beat import beat_schedule
from tasks.app import app


def test_decay_sweep_interval_comes_from_settings() -> None:
    entry = beat_schedule(load_settings(decay={"sweep_interval_minutes": 15}))["decay-sweep"]
    assert entry["task"] == "tasks.sleep.decay_all_users"
    assert entry["schedule"] == timedelta(minutes=15)
    assert entry["options"]["queue"] == "maintenance"
    assert beat_schedule(load_settings())["decay-sweep"]["schedule"] == timedelta(minutes=60)
    idle = beat_schedule(load_settings(decay={"sweep_interval_minutes": 15}))
    assert idle["promote-idle-sessions"]["task"] == "tasks.sleep.promote_idle_sessions"
    assert idle["promote-idle-sessions"]["schedule"] == timedelta(minutes=15)


def test_user_graphs_are_checked_at_the_configured_interval() -> None:
    import tasks.maintenance  # noqa: F401 - registers the tasks

    settings = load_settings(retrieval={"dedicated_graph_interval_minutes": 30})
    entry = beat_schedule(settings)["build-user-graphs"]
    assert entry["task"] == "tasks.maintenance.build_user_graphs"
    assert entry["task"] in app.tasks
    assert entry["schedule"] == timedelta(minutes=30)
    assert entry["options"]["queue"] == "maintenance"


def test_sleep_cycle_runs_daily_at_the_consolidation_hour() -> None:
    entry = beat_schedule(load_settings(sleep={"consolidation_hour": 4}))["sleep-cycle"]
    assert entry["task"] == "tasks.sleep.sleep_all_users"
    assert entry["schedule"].hour == {4} and entry["schedule"].minute == {0}
    zoned = load_settings(sleep={"tenant_timezones": {"acme": "Europe/Paris"}})
    assert beat_schedule(zoned)["sleep-cycle"]["schedule"].hour == set(range(24))


def test_a_tenant_is_due_in_its_own_local_hour() -> None:
    settings = load_settings(sleep={"tenant_timezones": {"acme": "America/New_York"}})
    three_utc = datetime(2025, 1, 15, 3, 0, tzinfo=UTC)
    assert tenant_due("other", three_utc, settings)
    assert not tenant_due("acme", three_utc, settings)
    assert tenant_due("acme", three_utc + timedelta(hours=5), settings)  # 03:00 EST


def test_invalid_sleep_settings_fail_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="conflict_min_similarity"):
        load_settings(sleep={"conflict_min_similarity": 0.9, "conflict_max_similarity": 0.8})
    with pytest.raises(ConfigError, match=r"tenant_timezones\.acme"):
        load_settings(sleep={"tenant_timezones": {"acme": "Mars/Olympus"}})


def test_sleep_tasks_are_registered_on_the_maintenance_queue() -> None:
    import tasks.sleep  # noqa: F401 - registers the tasks

    names = (
        "decay_user",
        "sleep_cycle",
        "decay_all_users",
        "sleep_all_users",
        "promote_idle_sessions",
        "promote_session",
    )
    for name in names:
        task = app.tasks[f"tasks.sleep.{name}"]
        assert app.amqp.router.route({}, task.name)["queue"].name == "maintenance"


def test_notes_without_a_sparse_vector_are_filled_daily_on_the_maintenance_queue() -> None:
    import tasks.maintenance  # noqa: F401 - registers the tasks

    entry = beat_schedule(load_settings())["fill-sparse-vectors"]
    assert entry["task"] == "tasks.maintenance.fill_sparse_vectors" in app.tasks
    assert entry["schedule"] == timedelta(days=1)
    assert entry["options"]["queue"] == "maintenance"


def test_notes_derived_under_an_earlier_rule_are_rebuilt_hourly_on_the_maintenance_queue() -> None:
    import tasks.maintenance  # noqa: F401 - registers the tasks

    entry = beat_schedule(load_settings())["rebuild-derived"]
    assert entry["task"] == "tasks.maintenance.rebuild_derived" in app.tasks
    assert entry["schedule"] == timedelta(hours=1)
    assert entry["options"]["queue"] == "maintenance"


def test_every_periodic_run_goes_ahead_of_traffic_on_its_queue() -> None:
    # Message priorities run 0 (first) to 9; accesses and other traffic use the default.
    entries = beat_schedule(load_settings()).values()
    assert {entry["options"]["priority"] for entry in entries} == {0}
    assert app.conf.task_default_priority > 0
