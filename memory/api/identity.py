"""Turn a token's principal plus the ids a call names into a Viewer, failing closed.

Rules: an agent token must name user_id and agent_id and reads by the agent's visibility;
a user-bound token acts for its own user only; viewer/operator/admin tokens read a named
user's memories at user level, or as a named agent when agent_id is given.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from memory.access.policy import Viewer, agent_viewer
from memory.access.tokens import Principal
from memory.config import get_settings
from memory.errors import AccessDeniedError, InvalidInputError


def resolve_viewer(
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
