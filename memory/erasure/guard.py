"""Whether a user (or a whole tenant) is being erased: what refuses captures meanwhile.

Invariants: an erasure is `running` from the commit of its row until its last pass has
verified that nothing is left; while it runs, no capture for its user (any user, for a
tenant erasure) is stored. The capture INSERT itself tests `being_erased_clause` (so a
capture racing the erasure's start cannot slip in), and `refuse_if_being_erased` turns a
refused capture into a 409 that names the user.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import ColumnElement, any_, exists, literal_column, or_, select
from sqlalchemy.orm import Session

from memory.erasure.models import Erasure
from memory.errors import ConflictError


class BeingErasedError(ConflictError):
    """A capture or an erasure for a user (or tenant) whose erasure is running (409)."""


def being_erased_clause(
    tenant_ids: ColumnElement[list[str]], user_ids: ColumnElement[list[str]]
) -> ColumnElement[bool]:
    """EXISTS a running erasure of one of these tenants, of the whole tenant or of one of
    these users (arrays: the capture statement's own parameters). The status is a literal,
    so even a generic plan may use the partial index of running erasures."""
    return exists().where(
        Erasure.status == literal_column("'running'"),
        Erasure.tenant_id == any_(tenant_ids),
        or_(Erasure.user_id.is_(None), Erasure.user_id == any_(user_ids)),
    )


def running_erasure(
    *, session: Session, tenant_id: str, user_ids: Collection[str] = ()
) -> Erasure | None:
    """The running erasure of the tenant, or of one of `user_ids` in it; None if none."""
    covered = Erasure.user_id.is_(None)
    if user_ids:
        covered = or_(covered, Erasure.user_id.in_(sorted(set(user_ids))))
    return session.scalar(
        select(Erasure)
        .where(Erasure.status == "running", Erasure.tenant_id == tenant_id, covered)
        .order_by(Erasure.started_at)
        .limit(1)
    )


def refuse_if_being_erased(*, session: Session, tenant_id: str, user_ids: Collection[str]) -> None:
    """BeingErasedError naming the user (or tenant) when one of them is being erased."""
    erasure = running_erasure(session=session, tenant_id=tenant_id, user_ids=user_ids)
    if erasure is not None:
        raise being_erased_error(erasure)


def being_erased_error(erasure: Erasure) -> BeingErasedError:
    erasure_id: uuid.UUID = erasure.id
    if erasure.user_id is None:
        return BeingErasedError(
            f"tenant '{erasure.tenant_id}' is being erased (erasure {erasure_id}): "
            "nothing is stored for it until the erasure is done",
            tenant_id=erasure.tenant_id,
            erasure_id=str(erasure_id),
        )
    return BeingErasedError(
        f"user '{erasure.user_id}' is being erased (erasure {erasure_id}): nothing is "
        "stored for this user until the erasure is done; then the id starts a new user",
        user_id=erasure.user_id,
        erasure_id=str(erasure_id),
    )
