"""Request dependencies: the authenticated principal and role checks.

Routes open their own sessions (`session_scope`, or `scoped_session_for` once the user is
known) so that row-level security is applied where the identity is resolved.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from memory.access.tokens import Principal, authenticate
from memory.db import session_scope
from memory.errors import AccessDeniedError, AuthenticationError


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthenticationError("Authorization header must be 'Bearer <token>'")
    return value.strip()


def get_principal(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
    x_muma_tenant: Annotated[str | None, Header()] = None,
) -> Principal:
    """Authenticate in a short transaction of its own; fail closed on anything unexpected."""
    secret = _bearer(authorization)
    with session_scope() as session:
        principal = authenticate(session=session, secret=secret)
    if x_muma_tenant and x_muma_tenant != principal.tenant_id:
        raise AccessDeniedError("token is not valid for this tenant", tenant_id=x_muma_tenant)
    request.state.principal = principal
    return principal


ROLE_RANK = {"agent": 0, "viewer": 1, "operator": 2, "admin": 3}


def require_roles(*roles: str):  # type: ignore[no-untyped-def]
    """A dependency allowing only the listed roles (403 for any other)."""

    def check(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
        if principal.role not in roles:
            raise AccessDeniedError(
                f"role '{principal.role}' may not call this endpoint", role=principal.role
            )
        return principal

    return check


PrincipalDep = Annotated[Principal, Depends(get_principal)]
