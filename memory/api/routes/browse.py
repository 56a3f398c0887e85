"""Browsing memories: list with filters, the tenant's users, archive and restore.

Access: listing reads through `resolve_viewer` + `visible_clause` like every read (an
agent token lists what its agent may see); GET /v1/users is for viewer, operator and
admin tokens; archive/restore are for operator and admin tokens only (403 otherwise,
whatever the dashboard shows) and are audited.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from memory.access.tokens import Principal
from memory.api.deps import PrincipalDep, require_roles
from memory.api.identity import resolve_viewer
from memory.api.schemas import Identifier, Kind, StorableTime, Visibility
from memory.commons.events import publish_events
from memory.config import get_settings
from memory.db import scoped_session_for, session_scope
from memory.notes.browse import BrowseFilters, list_item, list_notes, list_users
from memory.notes.lifecycle import archive_note, restore_note
from memory.notes.models import Note
from memory.ops.users import user_summary
from memory.types import utcnow

router = APIRouter(tags=["memories"])
StatusFilter = Literal["active", "archived", "deleted", "closed", "all"]
Reader = Annotated[Principal, Depends(require_roles("viewer", "operator", "admin"))]
Operator = Annotated[Principal, Depends(require_roles("operator", "admin"))]


@router.get("/v1/memories")
def browse_memories(
    principal: PrincipalDep,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query(description="read as this agent")] = None,
    author: Annotated[Identifier | None, Query(description="notes written by this agent")] = None,
    kind: Annotated[Kind | None, Query()] = None,
    domain: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    visibility: Annotated[Visibility | None, Query()] = None,
    status: Annotated[StatusFilter, Query()] = "active",
    since: Annotated[StorableTime | None, Query()] = None,
    until: Annotated[StorableTime | None, Query()] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=100_000)] = 0,
) -> dict[str, Any]:
    """One page of the memories the caller may see, newest first, with B and R now.
    `status`: active (current), archived, deleted, closed (superseded versions) or all."""
    filters = BrowseFilters(
        author=author,
        kind=kind,
        domain=domain,
        visibility=visibility,
        status=status,
        since=since,
        until=until,
        text=q,
    )
    settings, now = get_settings(), utcnow()
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        notes, total = list_notes(
            session=session, viewer=viewer, filters=filters, limit=limit, offset=offset
        )
        items = [list_item(n, settings, now) for n in notes]
    return {"items": items, "total": total, "limit": limit, "offset": offset}


@router.get("/v1/users")
def get_users(
    principal: Reader,
    prefix: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """The caller's tenant's users (anyone with an episode or a note) with note counts.
    A user-bound token sees only its own user (counted alone: nothing of the others)."""
    if principal.user_id is not None:
        return {"users": _own_user(principal, principal.user_id, prefix)}
    with session_scope() as session:
        users = list_users(
            session=session, tenant_id=principal.tenant_id, prefix=prefix, limit=limit
        )
    return {"users": users}


def _own_user(principal: Principal, user_id: str, prefix: str | None) -> list[dict[str, Any]]:
    if prefix and not user_id.startswith(prefix):
        return []
    with scoped_session_for(principal.tenant_id, user_id) as session:
        found = user_summary(session=session, tenant_id=principal.tenant_id, user_id=user_id)
    return [found] if found is not None else []


def _event(note: Note, kind: str) -> dict[str, Any]:
    return {
        "type": kind,
        "tenant_id": note.tenant_id,
        "user_id": note.user_id,
        "note_id": str(note.id),
        "agent_id": note.agent_id,
        "visibility": note.visibility,
        "domain": note.domain,
        "kind": note.kind,
        "at": utcnow().isoformat(),
    }


def _change_state(
    principal: Principal,
    note_id: uuid.UUID,
    user_id: str | None,
    agent_id: str | None,
    reason: str | None,
    *,
    archive: bool,
) -> dict[str, Any]:
    operation = archive_note if archive else restore_note
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=user_id, agent_id=agent_id
        )
        note, changed = operation(
            session=session, viewer=viewer, note_id=note_id, actor=principal.actor, reason=reason
        )
        body = {**list_item(note, get_settings(), utcnow()), "changed": changed}
        event = _event(note, "note.archived" if archive else "note.restored")
    if changed:
        publish_events([event])
    return body


@router.post("/v1/memories/{note_id}/archive")
def archive_memory(
    note_id: uuid.UUID,
    principal: Operator,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    reason: Annotated[str | None, Query(max_length=500)] = None,
) -> dict[str, Any]:
    """Archive the current version: kept and readable by id, no longer retrieved."""
    return _change_state(principal, note_id, user_id, agent_id, reason, archive=True)


@router.post("/v1/memories/{note_id}/restore")
def restore_memory(
    note_id: uuid.UUID,
    principal: Operator,
    user_id: Annotated[Identifier | None, Query()] = None,
    agent_id: Annotated[Identifier | None, Query()] = None,
    reason: Annotated[str | None, Query(max_length=500)] = None,
) -> dict[str, Any]:
    """Make an archived memory active (retrievable) again."""
    return _change_state(principal, note_id, user_id, agent_id, reason, archive=False)
