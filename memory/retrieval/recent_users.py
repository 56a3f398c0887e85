"""The users whose search files were read ahead most recently, kept in Redis so that an API
that starts again (a deploy, a crash) can read theirs ahead before their first search.

Invariants: at most `keep` users, newest first by the time of their last read-ahead;
one entry per (tenant, user); Redis failures never reach the caller (a cache hint only:
`remember` does nothing and `most_recent` returns no one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis

log = logging.getLogger(__name__)

RECENT_KEY = "muma:read-ahead:recent"
STARTUP_LOCK_KEY = "muma:read-ahead:startup"
# Ids never hold control characters (`memory.api.schemas.Identifier`), so no NUL.
_SEPARATOR = "\x00"


class RecentUsers:
    """A sorted set of "tenant NUL user" scored by the time of the user's last read-ahead."""

    def __init__(
        self,
        client: Callable[[], redis.Redis],
        *,
        key: str = RECENT_KEY,
        keep: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._key = key
        self._keep = keep
        self._clock = clock

    def remember(self, tenant_id: str, user_id: str) -> None:
        member = f"{tenant_id}{_SEPARATOR}{user_id}"
        try:
            pipe = self._client().pipeline(transaction=False)
            pipe.zadd(self._key, {member: self._clock()})
            pipe.zremrangebyrank(self._key, 0, -self._keep - 1)  # all but the newest `keep`
            pipe.execute()
        except redis.RedisError as exc:
            log.debug("recent users not recorded: %s", exc)

    def most_recent(self, limit: int) -> list[tuple[str, str]]:
        """Up to `limit` (tenant_id, user_id), the most recently read ahead first."""
        try:
            members = self._client().zrevrange(self._key, 0, limit - 1)
        except redis.RedisError as exc:
            log.debug("recent users not read: %s", exc)
            return []
        pairs = (str(m).split(_SEPARATOR, 1) for m in members)
        return [(p[0], p[1]) for p in pairs if len(p) == 2]

    def claim_startup(self, seconds: int) -> bool:
        """Whether this process is the one (of the deployment's API processes starting
        within `seconds` of each other) that reads the recent users ahead: they share the
        page cache and PostgreSQL's buffers, so one read serves all."""
        try:
            return bool(self._client().set(STARTUP_LOCK_KEY, "1", nx=True, ex=seconds))
        except redis.RedisError as exc:
            log.debug("start-up read-ahead not claimed: %s", exc)
            return False
