"""Token management over HTTP (admin only): list, create (secret shown once), revoke.

Invariants: an admin manages only tokens it has authority over (`memory.access.tokens`):
of its own tenant, and, for an admin bound to a user, only tokens bound to that user (a
token it may not manage answers 404 and is not listed; creating one is 403; a create
without user_id is bound to the caller's user). The secret is returned by the create call
and never again (only its sha256 is stored); a token cannot revoke itself, so an admin
cannot lock itself out by accident from the dashboard; every change is audited with the
calling token as actor.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import Field

from memory.access.models import ApiToken
from memory.access.tokens import Principal, create_token, list_tokens, revoke_token
from memory.api.deps import require_roles
from memory.api.schemas import Identifier, Strict
from memory.db import session_scope
from memory.errors import InvalidInputError

router = APIRouter(tags=["tokens"])
Admin = Annotated[Principal, Depends(require_roles("admin"))]


class TokenIn(Strict):
    role: Literal["agent", "viewer", "operator", "admin"]
    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    user_id: Identifier | None = None


def token_out(token: ApiToken) -> dict[str, Any]:
    return {
        "id": str(token.id),
        "prefix": token.prefix,
        "name": token.name,
        "role": token.role,
        "tenant_id": token.tenant_id,
        "user_id": token.user_id,
        "created_at": token.created_at.isoformat(),
        "revoked_at": token.revoked_at.isoformat() if token.revoked_at else None,
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
    }


@router.get("/v1/tokens")
def get_tokens(principal: Admin) -> dict[str, Any]:
    """The tokens the caller manages, oldest first, revoked ones included; never a secret."""
    with session_scope() as session:
        tokens = list_tokens(session=session, by=principal)
        return {"tokens": [token_out(t) for t in tokens], "current": str(principal.token_id)}


@router.post("/v1/tokens", status_code=201)
def post_token(body: TokenIn, principal: Admin) -> dict[str, Any]:
    """Create a token in the caller's tenant; `secret` is shown only in this answer."""
    with session_scope() as session:
        token, secret = create_token(
            session=session,
            role=body.role,
            tenant_id=principal.tenant_id,
            name=body.name,
            user_id=body.user_id,
            by=principal,
        )
        return {**token_out(token), "secret": secret}


@router.delete("/v1/tokens/{token_id}")
def delete_token(token_id: uuid.UUID, principal: Admin) -> dict[str, Any]:
    """Revoke a token of the caller's tenant (idempotent); not the caller's own."""
    if token_id == principal.token_id:
        raise InvalidInputError("a token cannot revoke itself", token_id=str(token_id))
    with session_scope() as session:
        token = revoke_token(session=session, token_ref=str(token_id), by=principal)
        return token_out(token)
