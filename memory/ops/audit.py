"""The append-only audit log: every state change is recorded with who, what and why."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from memory.ops.models import AuditEvent


def record_event(
    *,
    session: Session,
    tenant_id: str,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: str | None = None,
    user_id: str | None = None,
    reason: str | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    event = AuditEvent(
        tenant_id=tenant_id,
        user_id=user_id,
        actor=actor,
        action=action,
        entity_type=entity_type,
        entity_id=entity_id,
        reason=reason,
        data=data or {},
    )
    session.add(event)
    return event
