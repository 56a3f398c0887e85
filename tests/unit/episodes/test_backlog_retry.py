"""When a refused capture is told to come back (Retry-After)."""

from memory.episodes.backlog import MAX_RETRY_SECONDS, Backlog


def test_retry_after_is_the_time_to_drain_a_tenth_of_the_limit() -> None:
    backlog = Backlog(queued=5000, limit=5000, finished_per_second=50.0)
    assert backlog.retry_after_seconds == 10


def test_a_pace_measured_while_workers_start_never_asks_for_a_long_wait() -> None:
    # One episode a second over the last minute: the workers have just started.
    backlog = Backlog(queued=5001, limit=5000, finished_per_second=1.0)
    assert backlog.retry_after_seconds == MAX_RETRY_SECONDS == 30


def test_an_unknown_pace_asks_for_a_short_wait() -> None:
    assert Backlog(queued=5000, limit=5000, finished_per_second=0.0).retry_after_seconds == 5
