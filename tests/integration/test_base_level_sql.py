"""The read path's base level computed by PostgreSQL equals `model.base_level`, and a
search's explanation carries it at the search's own clock."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from memory.access.policy import Viewer
from memory.activation.base_level_sql import base_level_column, base_level_params
from memory.activation.model import base_level, retention
from memory.clients.embedder import embed_query
from memory.config import Settings, get_settings
from memory.db import session_scope
from memory.notes.models import Note
from memory.retrieval.service import SearchHit, search_notes
from memory.types import utcnow
from tests.integration.test_read_path import memory_user  # noqa: F401 - the fixture
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


# (stored accesses, access_count, first access): every branch of model.base_level.
HISTORIES = {
    "one access": ([_ago(2)], 1, _ago(2)),
    "several, one in the future and one now": (
        [_ago(0.5), _ago(30), _ago(400), NOW + timedelta(hours=3), NOW],
        5,
        _ago(400),
    ),
    "seconds old, under the floor": ([NOW - timedelta(milliseconds=200)], 1, _ago(0)),
    "none stored": ([], 1, _ago(5)),
    "more counted than stored (Petrov)": ([_ago(1), _ago(10), _ago(50)], 120, _ago(2000)),
    "first access younger than the stored history": ([_ago(3), _ago(90)], 9, _ago(20)),
    "first access at the oldest stored one": ([_ago(4), _ago(60)], 7, _ago(60)),
}


@pytest.mark.parametrize("decay", [0.5, 0.3])
def test_sql_base_level_equals_python(database_url: str, tenant_id: str, decay: float) -> None:
    notes = {
        name: new_note(
            tenant_id,
            "u",
            name,
            access_times=times,
            access_count=count,
            first_access_at=first,
        )
        for name, (times, count, first) in HISTORIES.items()
    }
    with session_scope() as session:
        session.add_all(notes.values())
        session.flush()
        found = dict(
            session.execute(
                select(Note.content, base_level_column(Note)).where(Note.tenant_id == tenant_id),
                base_level_params(NOW, decay),
            ).all()
        )
    for name, (times, count, first) in HISTORIES.items():
        expected = base_level(times, NOW, decay=decay, total_count=count, first_access=first)
        got = found[name]
        if math.isinf(expected):
            assert got == expected, name
        else:
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), name


def test_params_refuse_a_decay_outside_the_open_unit_interval() -> None:
    with pytest.raises(ValueError, match="decay"):
        base_level_params(NOW, 1.0)


def test_a_search_explains_each_hit_by_its_stored_history_at_its_clock(
    memory_user: tuple,  # noqa: F811 - the fixture
) -> None:
    user, _, tenant = memory_user
    query = "What is the name of my dog?"
    # B as stored history gives it: rehearsal's cap for ranking is checked apart below.
    defaults = get_settings()
    uncapped = defaults.activation.model_copy(update={"rehearsal_cap": None})
    settings = defaults.model_copy(update={"activation": uncapped})
    viewer = Viewer(tenant_id=tenant, user_id=user, agent_id="helper")
    with session_scope() as session:
        # The note the query asks about (a hit whatever rehearsal adds), with more accesses
        # counted than stored, so Petrov's tail is in the path.
        note = session.scalars(
            select(Note).where(Note.user_id == user, Note.content.contains("Biscuit")).limit(1)
        ).one()
        note.access_times = [utcnow() - timedelta(hours=h) for h in (30, 5, 1)]
        note.access_count, note.first_access_at = 80, utcnow() - timedelta(days=90)
    later = utcnow() + timedelta(days=3)

    def search(with_settings: Settings) -> list[SearchHit]:
        with session_scope(custom_plans=True) as session:
            return search_notes(
                session=session,
                viewer=viewer,
                query=query,
                vector=embed_query(query, with_settings),
                top_k=20,
                settings=with_settings,
                now=later,
            )

    hits = search(settings)
    with session_scope() as session:
        rows = {n.id: n for n in session.scalars(select(Note).where(Note.user_id == user))}
    assert note.id in {hit.note.id for hit in hits}
    decay = settings.activation.decay_parameter
    for hit in hits:
        row, activation = rows[hit.note.id], hit.activation
        assert activation is not None
        expected = base_level(
            row.access_times,
            later,
            decay=decay,
            total_count=row.access_count,
            first_access=row.first_access_at,
        )
        assert activation.base_level == pytest.approx(expected, rel=1e-12)
        kept = retention(row.last_access_at, later, row.half_life_hours)
        assert activation.retention == pytest.approx(kept, rel=1e-12)
    # With the default cap the rehearsed note ranks at most the cap above its age alone.
    [hit] = [h for h in search(defaults) if h.note.id == note.id]
    age_alone = -decay * math.log((later - rows[note.id].first_access_at).total_seconds() / 3600)
    cap = defaults.activation.rehearsal_cap
    assert cap is not None and hit.activation is not None
    assert hit.activation.base_level == pytest.approx(age_alone + cap, rel=1e-9)
