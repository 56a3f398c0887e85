"""API tokens: creation (secret shown once), sha256 lookup, listing and revocation.

Authentication is cached per process (`TokenCache`, keyed by the token's sha256, for
TOKEN_CACHE_SECONDS), so most requests skip the database. The bound this gives:
- a token revoked through `revoke_token` stops working at once in the process that
  revoked it (its entry is dropped and kept out of the cache for one TTL);
- in any other process (another API worker or host, after `muma tokens revoke` from the
  CLI) a revoked token keeps working for at most TOKEN_CACHE_SECONDS (30 s).
Failed lookups are never cached, so a new token works at once everywhere.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.access.models import ApiToken
from memory.errors import AuthenticationError, InvalidInputError, NotFoundError
from memory.ops.audit import record_event
from memory.types import TOKEN_ROLES, utcnow

TOKEN_PREFIX = "muma_"


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

    def get(self, token_hash: str) -> Principal | None:
        with self._lock:
            entry = self._entries.get(token_hash)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._entries[token_hash]
                return None
            return entry[1]

    def put(self, token_hash: str, principal: Principal) -> None:
        with self._lock:
            now = self._clock()
            if self._refused.get(token_hash, now) > now:
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
) -> tuple[ApiToken, str]:
    """Store a new token's hash; return the row and the secret (never stored)."""
    if role not in TOKEN_ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(TOKEN_ROLES)}", role=role)
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
        data={"role": role, "name": name},
    )
    return token, secret


def authenticate(*, session: Session, secret: str | None) -> Principal:
    """The principal behind a bearer secret; AuthenticationError if unknown or revoked.

    A cache hit (TOKEN_CACHE) answers without touching `session`; see the module
    docstring for how long a revocation made elsewhere takes to apply.
    """
    if not secret:
        raise AuthenticationError("missing bearer token")
    token_hash = hash_token(secret)
    cached = TOKEN_CACHE.get(token_hash)
    if cached is not None:
        return cached
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash))
    if token is None or token.revoked_at is not None:
        raise AuthenticationError("invalid or revoked token")
    principal = Principal(token.id, token.role, token.tenant_id, token.user_id)
    TOKEN_CACHE.put(token_hash, principal)
    return principal


def list_tokens(*, session: Session, tenant_id: str | None = None) -> list[ApiToken]:
    query = select(ApiToken).order_by(ApiToken.created_at)
    if tenant_id:
        query = query.where(ApiToken.tenant_id == tenant_id)
    return list(session.scalars(query))


def revoke_token(*, session: Session, token_ref: str, actor: str = "cli") -> ApiToken:
    """Revoke by id or by the displayed prefix; idempotent for an already revoked token.

    This process's authentication cache forgets the token at once; other processes within
    TOKEN_CACHE_SECONDS.
    """
    token = _find_token(session, token_ref)
    TOKEN_CACHE.drop(token.token_hash)
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
    try:
        token = session.get(ApiToken, uuid.UUID(token_ref))
    except ValueError:
        matches = list(session.scalars(select(ApiToken).where(ApiToken.prefix == token_ref)))
        token = matches[0] if len(matches) == 1 else None
    if token is None:
        raise NotFoundError(f"no token {token_ref!r}", token=token_ref)
    return token
