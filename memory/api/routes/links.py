"""POST /v1/links: link two memories by hand (agents, operators, admins)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter

from memory.api.deps import PrincipalDep
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier, Strict
from memory.db import session_scope
from memory.errors import AccessDeniedError
from memory.links.service import create_link, link_out

router = APIRouter(tags=["memories"])
LINKER_ROLES = ("agent", "operator", "admin")


class LinkIn(Strict):
    user_id: Identifier | None = None
    agent_id: Identifier | None = None
    source_id: uuid.UUID
    target_id: uuid.UUID
    kind: Literal["related", "derived_from", "supersedes", "contradicts"] = "related"


@router.post("/v1/links", status_code=201)
def post_link(body: LinkIn, principal: PrincipalDep) -> dict[str, Any]:
    """Link source → target; both must be memories the caller may see. Creating a link
    that exists returns it (`created: false`)."""
    if principal.role not in LINKER_ROLES:
        raise AccessDeniedError(
            f"role '{principal.role}' may not create links", role=principal.role
        )
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=body.user_id, agent_id=body.agent_id
        )
        link, created = create_link(
            session=session,
            viewer=viewer,
            source_id=body.source_id,
            target_id=body.target_id,
            kind=body.kind,
            created_by="agent" if principal.role == "agent" else "user",
            actor=principal.actor,
        )
        return {"link": link_out(link), "created": created}
