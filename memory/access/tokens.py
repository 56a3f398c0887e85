"""API tokens: creation (secret shown once), sha256 lookup, listing and revocation.

Authority (DESIGN.md §7): only admin tokens manage tokens, and only tokens of their tenant
neither stronger (agent < viewer < operator < admin) nor wider than themselves: a token
bound to a user manages only tokens bound to that user. `by=None` is the machine's
operator (the CLI: unbound, every tenant). A token `by` may not manage is "not found".

Authentication is cached per process (`TokenCache`, keyed by the token's sha256, for
TOKEN_CACHE_SECONDS), so most requests skip the database. Revocation:
- `revoke_token` drops the entry in its own process at once (and keeps it out of the
  cache for one TTL), and after its transaction commits it increments a revocation
  counter in Redis (REVOCATIONS_KEY);
- every cache hit first reads that counter (one Redis GET, far cheaper than the token
  query); a changed counter empties the cache, so a token revoked anywhere (another API
  worker or host, `muma tokens revoke`) stops working at once everywhere;
- when Redis cannot be asked, the cache is not used (every request reads the database);
  a revocation whose counter increment failed applies within TOKEN_CACHE_SECONDS (30 s).
Failed lookups are never cached, so a new token works at once everywhere.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import redis
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from memory.access.models import ApiToken
from memory.clients.redis import get_quick_redis, get_redis
from memory.errors import AccessDeniedError, AuthenticationError, InvalidInputError, NotFoundError
from memory.ops.audit import record_event
from memory.types import TOKEN_ROLES, utcnow

TOKEN_PREFIX = "muma_"
ROLE_RANK = {role: rank for rank, role in enumerate(TOKEN_ROLES)}  # agent < ... < admin
TOKEN_MANAGER_ROLES = frozenset({"admin"})


@dataclass(frozen=True)
class Principal:
    """Who is calling: a token's role and tenant, and the user it is bound to, if any."""

    token_id: uuid.UUID
    role: str
    tenant_id: str
    user_id: str | None = None

    @property
    def actor(self) -> str:
        return f"token:{self.token_id}"


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


TOKEN_CACHE_SECONDS = 30.0
TOKEN_CACHE_SIZE = 4096
REVOCATIONS_KEY = "muma:tokens:revocations"
log = logging.getLogger(__name__)


class TokenCache:
    """Principals by token hash for `ttl` seconds, thread-safe, at most `size` entries.

    A dropped (revoked) hash is refused for one TTL, so a request that read the token row
    before the revocation committed cannot put it back.
    """

    def __init__(
        self,
        ttl: float = TOKEN_CACHE_SECONDS,
        size: int = TOKEN_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl, self.size, self._clock = ttl, size, clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, Principal]] = {}
        self._refused: dict[str, float] = {}
        self._epoch: str | None = "0"  # the counter before any revocation

    def get(self, token_hash: str, epoch: str | None = "0") -> Principal | None:
        """The cached principal, unless the revocation counter moved (then: empty cache)."""
        with self._lock:
            if epoch is None:
                return None
            if epoch != self._epoch:
                self._entries.clear()
                self._epoch = epoch
                return None
            entry = self._entries.get(token_hash)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._entries[token_hash]
                return None
            return entry[1]

    def put(self, token_hash: str, principal: Principal, epoch: str | None = "0") -> None:
        with self._lock:
            now = self._clock()
            if epoch is None or self._refused.get(token_hash, now) > now:
                return
            if len(self._entries) >= self.size:
                self._evict(now)
            self._entries[token_hash] = (now + self.ttl, principal)

    def drop(self, token_hash: str) -> None:
        with self._lock:
            now = self._clock()
            self._entries.pop(token_hash, None)
            self._refused = {k: t for k, t in self._refused.items() if t > now}
            self._refused[token_hash] = now + self.ttl

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._refused.clear()

    def _evict(self, now: float) -> None:
        self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
        while len(self._entries) >= self.size:  # still full: drop the oldest insertions
            del self._entries[next(iter(self._entries))]


TOKEN_CACHE = TokenCache()


def create_token(
    *,
    session: Session,
    role: str,
    tenant_id: str,
    name: str | None = None,
    user_id: str | None = None,
    actor: str = "cli",
    by: Principal | None = None,
) -> tuple[ApiToken, str]:
    """Store a new token's hash; return the row and the secret (never stored).

    Made `by` a token: in that token's tenant, and a token bound to a user binds the new
    one to the same user unless `user_id` names it (naming another is refused).
    """
    if role not in TOKEN_ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(TOKEN_ROLES)}", role=role)
    if by is not None:
        tenant_id, user_id = by.tenant_id, user_id or by.user_id
        _require_authority(by, role=role, user_id=user_id)
        actor = by.actor
    if not tenant_id:
        raise InvalidInputError("tenant must not be empty")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        id=uuid.uuid4(),
        token_hash=hash_token(secret),
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        name=name,
        role=role,
        tenant_id=tenant_id,
        user_id=user_id,
    )
    session.add(token)
    session.flush()
    record_event(
        session=session,
        tenant_id=tenant_id,
        actor=actor,
        action="token.created",
        entity_type="token",
        entity_id=str(token.id),
        data={"role": role, "name": name, "user_id": user_id},
    )
    return token, secret


def may_manage(by: Principal | None, token: ApiToken) -> bool:
    """Whether `by` may see or revoke `token` (see the module docstring)."""
    if by is None:
        return True
    return (
        by.role in TOKEN_MANAGER_ROLES
        and token.tenant_id == by.tenant_id
        and ROLE_RANK[token.role] <= ROLE_RANK[by.role]
        and (by.user_id is None or token.user_id == by.user_id)
    )


def _require_authority(by: Principal, *, role: str, user_id: str | None) -> None:
    if by.role not in TOKEN_MANAGER_ROLES:
        raise AccessDeniedError(f"role '{by.role}' may not manage tokens", role=by.role)
    if ROLE_RANK[role] > ROLE_RANK[by.role]:
        raise AccessDeniedError(f"a '{by.role}' token may not create a '{role}' token", role=role)
    if by.user_id is not None and user_id != by.user_id:
        raise AccessDeniedError(
            f"user_id: a token bound to user '{by.user_id}' may only create tokens bound to it",
            user_id=user_id,
        )


def authenticate(*, session: Session, secret: str | None) -> Principal:
    """The principal behind a bearer secret; AuthenticationError if unknown or revoked.

    A cache hit (TOKEN_CACHE) answers without touching `session`; see the module
    docstring for how long a revocation made elsewhere takes to apply.
    """
    if not secret:
        raise AuthenticationError("missing bearer token")
    token_hash = hash_token(secret)
    epoch = _revocation_epoch()
    cached = TOKEN_CACHE.get(token_hash, epoch)
    if cached is not None:
        return cached
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash))
    if token is None or token.revoked_at is not None:
        raise AuthenticationError("invalid or revoked token")
    principal = Principal(token.id, token.role, token.tenant_id, token.user_id)
    TOKEN_CACHE.put(token_hash, principal, epoch)
    return principal


# After Redis failed to answer, requests do not ask it again for this long: they read the
# token row instead (the cache is bypassed, so a revocation still applies at once).
REDIS_RETRY_SECONDS = 5.0
_redis_quiet_until = 0.0


def _revocation_epoch() -> str | None:
    """The cluster-wide revocation counter; None when Redis cannot be asked (within
    QUICK_TIMEOUT_SECONDS, or it failed in the last REDIS_RETRY_SECONDS)."""
    global _redis_quiet_until
    if time.monotonic() < _redis_quiet_until:
        return None
    try:
        return str(get_quick_redis().get(REVOCATIONS_KEY) or "0")
    except redis.RedisError:
        _redis_quiet_until = time.monotonic() + REDIS_RETRY_SECONDS
        return None


def _announce_revocation(session: Session) -> None:
    """Bump the revocation counter once the revocation is committed (never before: another
    process could re-read the still valid row and cache it under the new counter)."""

    def bump(_: Session) -> None:
        try:
            get_redis().incr(REVOCATIONS_KEY)
        except redis.RedisError as exc:  # other processes fall back on the TTL
            log.warning(
                "token revocation not announced (%s); applies within %.0f s",
                exc,
                TOKEN_CACHE_SECONDS,
            )

    event.listen(session, "after_commit", bump, once=True)


def list_tokens(
    *, session: Session, tenant_id: str | None = None, by: Principal | None = None
) -> list[ApiToken]:
    """Oldest first, of `tenant_id` (or all); made `by` a token, those it may manage."""
    tenant_id = by.tenant_id if by is not None else tenant_id
    query = select(ApiToken).order_by(ApiToken.created_at)
    if tenant_id:
        query = query.where(ApiToken.tenant_id == tenant_id)
    return [t for t in session.scalars(query) if may_manage(by, t)]


def revoke_token(
    *, session: Session, token_ref: str, actor: str = "cli", by: Principal | None = None
) -> ApiToken:
    """Revoke by id or by the displayed prefix; idempotent for an already revoked token.

    NotFoundError for a token `by` may not manage. Every process's authentication cache
    forgets the token once this transaction commits (see the module docstring).
    """
    token = _find_token(session, token_ref)
    if not may_manage(by, token):
        raise NotFoundError(f"no token {token_ref!r}", token=token_ref)
    actor = by.actor if by is not None else actor
    TOKEN_CACHE.drop(token.token_hash)
    _announce_revocation(session)
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        record_event(
            session=session,
            tenant_id=token.tenant_id,
            actor=actor,
            action="token.revoked",
            entity_type="token",
            entity_id=str(token.id),
        )
    session.flush()
    return token


def _find_token(session: Session, token_ref: str) -> ApiToken:
    # The prefix as `muma tokens list` shows it ends in an ellipsis.
    token_ref = token_ref.strip().removesuffix("…").removesuffix("...")
    try:
        token = session.get(ApiToken, uuid.UUID(token_ref))
    except ValueError:
        matches = list(session.scalars(select(ApiToken).where(ApiToken.prefix == token_ref)))
        token = matches[0] if len(matches) == 1 else None
    if token is None:
        raise NotFoundError(f"no token {token_ref!r}", token=token_ref)
    return token
