"""A watched server (one the supervisor did not spawn) is checked, reported and restarted,
and a failing restart is retried with a growing delay, never the supervisor's end."""

from __future__ import annotations

from memory.runtime.supervisor import Supervisor, Watch


def _supervisor(watch: Watch, reports: list[str]) -> Supervisor:
    return Supervisor([], report=reports.append, watches=[watch])


def test_a_server_that_stopped_is_reported_and_restarted() -> None:
    state = {"up": True, "restarts": 0}

    def restart() -> None:
        state["restarts"] += 1
        state["up"] = True

    reports: list[str] = []
    supervisor = _supervisor(Watch("PostgreSQL", lambda: bool(state["up"]), restart, 0), reports)
    supervisor.poll()
    assert reports == [] and state["restarts"] == 0
    state["up"] = False
    supervisor.poll()
    assert state == {"up": True, "restarts": 1}
    assert reports == ["PostgreSQL is not running; restarting it", "PostgreSQL restarted"]


def test_a_failing_restart_is_retried_later_with_a_growing_delay() -> None:
    attempts: list[int] = []

    def restart() -> None:
        attempts.append(1)
        raise RuntimeError("lock file exists")

    reports: list[str] = []
    watch = Watch("PostgreSQL", lambda: False, restart, 0)
    supervisor = _supervisor(watch, reports)
    supervisor.poll()
    supervisor.poll()  # within the delay: not tried again
    assert len(attempts) == 1
    assert "did not restart (lock file exists); trying again in 1s" in reports[-1]
    watch.next_check = 0
    supervisor.poll()
    assert len(attempts) == 2 and reports[-1].endswith("trying again in 2s")


def test_nothing_is_restarted_while_stopping() -> None:
    restarted: list[int] = []
    supervisor = _supervisor(Watch("PostgreSQL", lambda: False, lambda: restarted.append(1), 0), [])
    supervisor.stop()
    supervisor.poll()
    assert restarted == []
