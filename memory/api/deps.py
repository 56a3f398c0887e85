"""Request dependencies: the authenticated principal and role checks.

A token bound to a user acts on that user only; an endpoint whose answer or effect spans
every user of the tenant and cannot be narrowed to one (Prometheus metrics, an agent's
rights) is declared with `require_roles(..., unbound=True)` and refuses bound tokens.

Routes open their own sessions (`session_scope`, or `scoped_session_for` once the user is
known) so that row-level security is applied where the identity is resolved.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

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


# Declares the token in the OpenAPI document as a security scheme. It never answers by
# itself (auto_error off): `get_principal` reads the header and says what is wrong with it.
BEARER = HTTPBearer(
    scheme_name="bearerAuth",
    description="A MUMA token (`muma tokens create`): `Authorization: Bearer muma_…`",
    auto_error=False,
)


def get_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
    x_muma_tenant: Annotated[str | None, Header()] = None,
) -> Principal:
    """Authenticate in a short transaction of its own; fail closed on anything unexpected."""
    secret = _bearer(request.headers.get("authorization"))
    with session_scope() as session:
        principal = authenticate(session=session, secret=secret)
    if x_muma_tenant and x_muma_tenant != principal.tenant_id:
        raise AccessDeniedError("token is not valid for this tenant", tenant_id=x_muma_tenant)
    request.state.principal = principal
    return principal


def require_roles(*roles: str, unbound: bool = False):  # type: ignore[no-untyped-def]
    """A dependency allowing only the listed roles (403 for any other); with `unbound`,
    only tokens bound to no user (403 for a bound one: the endpoint spans every user)."""

    def check(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
        if principal.role not in roles:
            raise AccessDeniedError(
                f"role '{principal.role}' may not call this endpoint", role=principal.role
            )
        if unbound and principal.user_id is not None:
            raise AccessDeniedError(
                "a token bound to a user may not call this endpoint: it spans every user "
                "of the tenant; use a token not bound to a user",
                user_id=principal.user_id,
            )
        return principal

    return check


PrincipalDep = Annotated[Principal, Depends(get_principal)]
