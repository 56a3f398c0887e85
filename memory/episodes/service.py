"""Episode capture and state."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session


def requeue_candidates(*, session: Session) -> list[uuid.UUID]:
    return []
