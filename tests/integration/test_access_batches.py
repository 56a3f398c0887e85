"""A batch of gathered accesses is recorded as the accesses one at a time would be."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.activation.service import record_access_batch, record_note_accesses
from memory.config import get_settings
from memory.db import session_scope
from memory.notes.models import Note
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def test_a_batch_equals_its_accesses_recorded_one_by_one(database_url: str, tenant_id: str) -> None:
    activation = get_settings().activation
    history = {"access_times": [T0], "access_count": 1, "first_access_at": T0,
               "last_access_at": T0, "half_life_hours": 24.0}  # fmt: skip
    one_by_one = new_note(tenant_id, "u", "one by one", **history)
    batched = new_note(tenant_id, "u", "batched", **history)
    times = [T0 + timedelta(minutes=m) for m in (5, 1, 3)]  # gathered out of order
    with session_scope() as session:
        session.add_all([one_by_one, batched])
        session.flush()
        for at in sorted(times):
            record_note_accesses(
                session=session, note_ids=[one_by_one.id], at=at, settings=activation
            )
        assert (
            record_access_batch(session=session, accesses={batched.id: times}, settings=activation)
            == 1
        )
    with session_scope() as session:
        a, b = session.get(Note, one_by_one.id), session.get(Note, batched.id)
        assert a is not None and b is not None
        for column in ("access_times", "access_count", "first_access_at", "last_access_at",
                       "half_life_hours"):  # fmt: skip
            assert getattr(a, column) == getattr(b, column), column
        assert b.access_count == 4 and b.last_access_at == T0 + timedelta(minutes=5)
