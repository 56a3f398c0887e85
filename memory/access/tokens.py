"""API tokens: creation (secret shown once), sha256 lookup, listing and revocation."""

from __future__ import annotations

import hashlib
import secrets
import uuid
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
    """The principal behind a bearer secret; AuthenticationError if unknown or revoked."""
    if not secret:
        raise AuthenticationError("missing bearer token")
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
    if token is None or token.revoked_at is not None:
        raise AuthenticationError("invalid or revoked token")
    return Principal(token.id, token.role, token.tenant_id, token.user_id)


def list_tokens(*, session: Session, tenant_id: str | None = None) -> list[ApiToken]:
    query = select(ApiToken).order_by(ApiToken.created_at)
    if tenant_id:
        query = query.where(ApiToken.tenant_id == tenant_id)
    return list(session.scalars(query))


def revoke_token(*, session: Session, token_ref: str, actor: str = "cli") -> ApiToken:
    """Revoke by id or by the displayed prefix; idempotent for an already revoked token."""
    token = _find_token(session, token_ref)
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
