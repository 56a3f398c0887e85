"""Turn a token's principal plus the ids a call names into a Viewer, failing closed.

Rules: an agent token must name user_id and agent_id and reads by the agent's visibility;
a user-bound token acts for its own user only; viewer/operator/admin tokens read a named
user's memories at user level, or as a named agent when agent_id is given.

Row-level security: resolving a viewer also binds the session's transaction to the
viewer's tenant and user (`scope_session`), so everything a route reads or writes after
it goes through PostgreSQL's policies as well as through `visible_clause`. A route that
reads in another transaction opens it with `scoped_session_for`.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from memory.access.policy import Viewer, agent_viewer
from memory.access.tokens import Principal
from memory.config import get_settings
from memory.db import scope_session
from memory.errors import AccessDeniedError, InvalidInputError


def resolve_viewer(
    *,
    session: Session,
    principal: Principal,
    user_id: str | None,
    agent_id: str | None,
    scope: bool = True,
) -> Viewer:
    """The caller's viewer; from here on `session` sees only the viewer's tenant and user.

    `scope=False` is for a caller that must query as the owner first and calls
    `scope_session` itself before anything leaves (the ranking of /v1/search).
    """
    viewer = _viewer(session=session, principal=principal, user_id=user_id, agent_id=agent_id)
    if scope:
        scope_session(session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
    return viewer


def _viewer(
    *, session: Session, principal: Principal, user_id: str | None, agent_id: str | None
) -> Viewer:
    if principal.user_id is not None:
        if user_id is not None and user_id != principal.user_id:
            raise AccessDeniedError("token is bound to another user", user_id=user_id)
        user_id = principal.user_id
    if not user_id:
        raise InvalidInputError("user_id: field required")
    if principal.role == "agent" and not agent_id:
        raise InvalidInputError("agent_id: field required for agent tokens")
    if agent_id:
        return agent_viewer(
            session=session,
            settings=get_settings(),
            tenant_id=principal.tenant_id,
            user_id=user_id,
            agent_id=agent_id,
        )
    return Viewer(principal.tenant_id, user_id, None)


def require_writer(principal: Principal, user_id: str) -> None:
    """Only agent and admin tokens write memories; a user-bound token only its own."""
    if principal.role not in ("agent", "admin"):
        raise AccessDeniedError(
            f"role '{principal.role}' may not write memories", role=principal.role
        )
    if principal.user_id is not None and principal.user_id != user_id:
        raise AccessDeniedError("token is bound to another user", user_id=user_id)
