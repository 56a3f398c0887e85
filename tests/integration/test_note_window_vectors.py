"""note_window_vectors (migration 0008): the trigger-kept mirror of the searchable notes'
window vectors, which the read path's dense_window route scores its candidates from.

The mirror follows inserts, window changes, status, validity and deletes of notes (also
when made as `muma_app`), and nothing else; `window_similarity` reads only the viewer's
rows and scores them as the cosine of the stored window. The migration itself:
`test_migrations.test_0008_fills_the_window_mirror_and_downgrades`.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from memory.access.policy import Viewer
from memory.db import session_scope
from memory.notes.models import Note
from memory.notes.vectors import VectorParam, vector_text
from memory.retrieval import routes as r
from memory.types import utcnow
from tests.support.helpers import mirror_ids_for_app_role, new_note, update_note

pytestmark = pytest.mark.integration

# xmin shows whether the row was rewritten.
MIRROR = (
    "SELECT window_embedding::text AS v, xmin::text AS x"
    " FROM note_window_vectors WHERE note_id = :id"
)


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=384)
    return list(v / np.linalg.norm(v))


def _mirror(note_id: uuid.UUID) -> Any:
    with session_scope() as session:
        return session.execute(text(MIRROR), {"id": note_id}).one_or_none()


def _note(tenant: str, user: str, window: list[float] | None, **extra: Any) -> Note:
    return new_note(tenant, user, f"note {uuid.uuid4()}", window_embedding=window, **extra)


def test_mirror_follows_the_window_vector(database_url: str, tenant_id: str, user_id: str) -> None:
    rng = np.random.default_rng(11)
    note = _note(tenant_id, user_id, _unit(rng))
    bare = _note(tenant_id, user_id, None)
    with session_scope() as session:
        session.add_all([note, bare])
    first = _mirror(note.id)
    assert first is not None and _mirror(bare.id) is None  # no window, no row
    with session_scope() as session:  # neither other columns nor the same vector fire
        session.execute(
            text("UPDATE notes SET pinned = true, window_embedding = window_embedding"
                 " WHERE id = :id"),
            {"id": note.id},
        )  # fmt: skip
    assert _mirror(note.id) == first
    update_note(note.id, window_embedding=_unit(rng))
    update_note(bare.id, window_embedding=_unit(rng))
    assert _mirror(note.id).v != first.v and _mirror(bare.id) is not None
    update_note(note.id, status="archived")  # archived notes are searchable when asked for
    assert _mirror(note.id) is not None
    update_note(note.id, status="deleted")
    assert _mirror(note.id) is None
    update_note(note.id, status="active")
    assert _mirror(note.id) is not None
    update_note(note.id, valid_to=utcnow())  # a closed version is never searched
    assert _mirror(note.id) is None
    update_note(bare.id, window_embedding=None)
    assert _mirror(bare.id) is None
    update_note(bare.id, window_embedding=_unit(rng))
    with session_scope() as session:
        session.execute(text("DELETE FROM notes WHERE id = :id"), {"id": bare.id})
    assert _mirror(bare.id) is None


def test_app_role_keeps_the_mirror_and_reads_only_its_rows(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    rng = np.random.default_rng(12)
    other = _note(tenant_id, f"u-{uuid.uuid4().hex[:10]}", _unit(rng))
    own = _note(tenant_id, user_id, _unit(rng))
    assert mirror_ids_for_app_role("note_window_vectors", own, other) == {own.id}
    assert _mirror(own.id) is not None and _mirror(other.id) is not None


def test_window_similarity_scores_the_viewers_notes_by_their_stored_window(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    rng = np.random.default_rng(13)
    windows = [_unit(rng) for _ in range(3)]
    mine = [_note(tenant_id, user_id, w) for w in windows[:2]]
    theirs = _note(tenant_id, f"u-{uuid.uuid4().hex[:10]}", windows[2])
    with session_scope() as session:
        session.add_all([*mine, theirs])
    query = np.asarray(_unit(rng), dtype=np.float32)
    ids = [n.id for n in (*mine, theirs)]
    viewer = Viewer(tenant_id, user_id, "main")
    with session_scope() as session:
        scores = r.window_similarity(session, viewer, ids, vector_text(query))
        # The read path's binary form of the same float32 values: the same cosines.
        binary = r.window_similarity(session, viewer, ids, VectorParam(query))
    assert binary == scores
    assert set(scores) == {n.id for n in mine}
    for note, window in zip(mine, windows, strict=False):
        assert scores[note.id] == pytest.approx(float(np.dot(window, query)), abs=1e-5)
