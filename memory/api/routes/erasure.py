"""Erasing a user or the caller's tenant (admin tokens bound to no user), and following it.

Invariants: an erasure starts in the request's transaction (its row, the tokens revoked)
and runs in the background (`tasks.erasure.erase`); the answer is 202 with its id at
once. A tenant is erased only when the body names it again in `confirm`; the caller's
own token is revoked with the others, so its progress is then read with the CLI (or a
token made for the tenant afterwards). An erasure of another tenant is 404.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from memory.access.tokens import Principal
from memory.api.deps import require_roles
from memory.api.schemas import Identifier, Strict
from memory.db import session_scope
from memory.erasure.models import Erasure
from memory.erasure.users import MAX_REASON, get_erasure, start_erasure
from memory.errors import InvalidInputError
from tasks.erasure import enqueue_erasure

router = APIRouter(tags=["erasure"])
Admin = Annotated[Principal, Depends(require_roles("admin", unbound=True))]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_REASON)]


class UserEraseIn(Strict):
    reason: Reason | None = None


class TenantEraseIn(Strict):
    confirm: Identifier = Field(description="The caller's tenant id, again: what is erased.")
    reason: Reason | None = None


class ErasureOut(BaseModel):
    erasure_id: uuid.UUID
    tenant_id: str
    user_id: str | None
    status: str
    requested_by: str
    reason: str | None
    started_at: datetime
    finished_at: datetime | None
    progress: dict[str, Any]
    report: dict[str, Any] | None


def erasure_out(erasure: Erasure) -> ErasureOut:
    return ErasureOut(
        erasure_id=erasure.id,
        tenant_id=erasure.tenant_id,
        user_id=erasure.user_id,
        status=erasure.status,
        requested_by=erasure.requested_by,
        reason=erasure.reason,
        started_at=erasure.started_at,
        finished_at=erasure.finished_at,
        progress=erasure.progress,
        report=erasure.report,
    )


def _start(principal: Principal, user_id: str | None, reason: str | None) -> ErasureOut:
    with session_scope() as session:
        erasure, _ = start_erasure(
            session=session,
            tenant_id=principal.tenant_id,
            user_id=user_id,
            requested_by=principal.actor,
            reason=reason,
        )
        answer = erasure_out(erasure)
    # After the commit: the task must find the row. A lost message is sent again by beat.
    enqueue_erasure(answer.erasure_id)
    return answer


@router.post("/v1/users/{user_id}/erase", status_code=202, response_model=ErasureOut)
def erase_user(
    user_id: Annotated[Identifier, Path()], principal: Admin, body: UserEraseIn | None = None
) -> ErasureOut:
    """Erase every row, key and synced file of the user, in the background; the tokens
    bound to the user stop working at once and captures for it are refused (409) until
    it is done. Starting it again while it runs returns the same erasure."""
    return _start(principal, user_id, body.reason if body else None)


@router.post("/v1/tenant/erase", status_code=202, response_model=ErasureOut)
def erase_tenant(body: TenantEraseIn, principal: Admin) -> ErasureOut:
    """Erase the caller's whole tenant: every user's data, the agents, the tokens (the
    caller's too) and earlier erasure records; `confirm` must be the tenant's id."""
    if body.confirm != principal.tenant_id:
        raise InvalidInputError(
            "confirm: must be the id of the tenant to erase (the caller's)", field="confirm"
        )
    return _start(principal, None, body.reason)


@router.get("/v1/erasures/{erasure_id}", response_model=ErasureOut)
def get_erasure_status(erasure_id: uuid.UUID, principal: Admin) -> ErasureOut:
    """An erasure of the caller's tenant: its progress, and when done its report."""
    with session_scope() as session:
        erasure = get_erasure(session=session, erasure_id=erasure_id, tenant_id=principal.tenant_id)
        return erasure_out(erasure)
