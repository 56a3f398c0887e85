"""Erasing a user, or a whole tenant: every row, Redis key and synced file of theirs goes.

An erasure is a row of `erasures` (status `running` until done) and a sequence of steps,
each one short transaction (`erase_step`, memory.erasure.steps), run by a task or by the
CLI (memory.erasure.runner):
1. `start_erasure`: the row is stored and the tokens bound to the user (every token of the
   tenant) are revoked, in one transaction; from its commit on, captures are refused.
2. phase `outside`: the census of the rows to remove; Redis keys and synced files removed.
3. phase `rows`: batches of at most `limit` rows, unit after unit (memory.erasure.plan).
4. phase `drain`: once nothing was found, wait for the transactions older than that
   moment (memory.erasure.drain), then a last census in the user's maintenance lock: if
   anything came back, back to 3; else Redis and files once more, the report, `done`.

Invariants: one erasure runs per user (a second start returns it) and none for a user
of a tenant being erased; the steps are resumable and idempotent (memory.erasure.steps);
the row that remains names the tenant, the user, who asked and why, and holds counts:
no content.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from memory.access.models import ApiToken
from memory.access.tokens import revoke_token
from memory.erasure.guard import being_erased_error, running_erasure
from memory.erasure.models import Erasure
from memory.erasure.steps import DEFAULT_BATCH, Step, erase_step
from memory.errors import InvalidInputError, NotFoundError
from memory.ops.users import user_known
from memory.types import utcnow

MAX_REASON = 500
# Starts in one tenant are serialised by this advisory lock (first key: its own class).
START_LOCK_CLASS = 0x5EEA
__all__ = [
    "DEFAULT_BATCH",
    "Step",
    "erase_step",
    "get_erasure",
    "list_erasures",
    "stalled_erasures",
    "start_erasure",
]


def start_erasure(
    *,
    session: Session,
    tenant_id: str,
    user_id: str | None,
    requested_by: str,
    reason: str | None = None,
) -> tuple[Erasure, bool]:
    """Record the erasure of the user (None: the whole tenant) and revoke its tokens;
    returns (the erasure, whether it is new). The erasure already running for the same
    user is returned instead of a second one; a user of a tenant being erased is a 409,
    an unknown user or tenant a 404."""
    _validate(tenant_id, user_id, reason)
    session.execute(
        text("SELECT pg_advisory_xact_lock(:cls, hashtext(:tenant))"),
        {"cls": START_LOCK_CLASS, "tenant": tenant_id},
    )
    running = running_erasure(
        session=session, tenant_id=tenant_id, user_ids=[user_id] if user_id else []
    )
    if running is not None and running.user_id == user_id:
        return running, False
    if running is not None:  # the whole tenant is being erased
        raise being_erased_error(running)
    _require_known(session, tenant_id, user_id)
    now = utcnow()
    erasure = Erasure(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        user_id=user_id,
        requested_by=requested_by[:160],
        reason=reason,
        status="running",
        progress={
            "phase": "outside",
            "unit": 0,
            "passes": 1,
            "steps": 0,
            "removed": {},
            "updated_at": now.isoformat(),
        },
        started_at=now,
    )
    session.add(erasure)
    session.flush()
    revoked = _revoke_tokens(session, tenant_id, user_id, requested_by)
    erasure.progress = {**erasure.progress, "tokens_revoked": revoked}
    return erasure, True


def _validate(tenant_id: str, user_id: str | None, reason: str | None) -> None:
    if not tenant_id or not tenant_id.strip():
        raise InvalidInputError("tenant_id: must not be empty")
    if user_id is not None and not user_id.strip():
        raise InvalidInputError("user_id: must not be empty")
    if reason is not None and len(reason) > MAX_REASON:
        raise InvalidInputError(f"reason: at most {MAX_REASON} characters")


def _require_known(session: Session, tenant_id: str, user_id: str | None) -> None:
    """A user (tenant) is known by an episode, a note or a token; else a typo: 404."""
    tokens = select(ApiToken.id).where(ApiToken.tenant_id == tenant_id)
    if user_id is not None:
        tokens = tokens.where(ApiToken.user_id == user_id)
        if user_known(session=session, tenant_id=tenant_id, user_id=user_id):
            return
        what, ids = f"user '{user_id}' in tenant '{tenant_id}'", {"user_id": user_id}
    else:
        if _tenant_known(session, tenant_id):
            return
        what, ids = f"tenant '{tenant_id}'", {}
    if session.scalar(tokens.limit(1)) is None:
        raise NotFoundError(
            f"unknown {what}: no episodes, memories or tokens", tenant_id=tenant_id, **ids
        )


def _tenant_known(session: Session, tenant_id: str) -> bool:
    return bool(
        session.scalar(
            text(
                "SELECT EXISTS (SELECT 1 FROM episodes WHERE tenant_id = :t)"
                " OR EXISTS (SELECT 1 FROM notes WHERE tenant_id = :t)"
                " OR EXISTS (SELECT 1 FROM agents WHERE tenant_id = :t)"
            ),
            {"t": tenant_id},
        )
    )


def _revoke_tokens(session: Session, tenant_id: str, user_id: str | None, actor: str) -> int:
    """Revoke the user's (the tenant's) live tokens: every API process's cache forgets
    them once this transaction commits (memory.access.tokens)."""
    query = select(ApiToken.id).where(
        ApiToken.tenant_id == tenant_id, ApiToken.revoked_at.is_(None)
    )
    if user_id is not None:
        query = query.where(ApiToken.user_id == user_id)
    token_ids = list(session.scalars(query))
    for token_id in token_ids:
        revoke_token(session=session, token_ref=str(token_id), actor=actor[:160])
    return len(token_ids)


def stalled_erasures(*, session: Session, idle_seconds: float) -> list[uuid.UUID]:
    """Running erasures no step has advanced for `idle_seconds` (their task was lost)."""
    updated = func.coalesce(
        Erasure.progress["updated_at"].astext.cast(Erasure.started_at.type), Erasure.started_at
    )
    cutoff = utcnow() - timedelta(seconds=idle_seconds)
    query = select(Erasure.id).where(Erasure.status == "running", updated < cutoff)
    return list(session.scalars(query.order_by(Erasure.started_at)))


def get_erasure(
    *, session: Session, erasure_id: uuid.UUID, tenant_id: str | None = None
) -> Erasure:
    """The erasure; NotFoundError when there is none (or, with `tenant_id`, in another
    tenant: its existence is not revealed)."""
    erasure = session.get(Erasure, erasure_id)
    if erasure is None or (tenant_id is not None and erasure.tenant_id != tenant_id):
        raise NotFoundError(f"no erasure {erasure_id}", erasure_id=str(erasure_id))
    return erasure


def list_erasures(*, session: Session, tenant_id: str | None, limit: int = 50) -> list[Erasure]:
    """The most recent erasures first, of one tenant (or of all)."""
    query = select(Erasure).order_by(Erasure.started_at.desc()).limit(limit)
    if tenant_id is not None:
        query = query.where(Erasure.tenant_id == tenant_id)
    return list(session.scalars(query))
