"""note_terms (migration 0009): the trigger-kept mirror of what the BM25 routes read of
the searchable notes (terms, lengths, the access rules' and filters' columns).

The mirror follows inserts, every mirrored column, status, validity and deletes of notes
(also when made as `muma_app`), and nothing else; the BM25 routes read it (a note without
its row is not found), so a change of a note's access columns changes what they return
at once. The migration itself:
`test_migrations.test_0009_fills_the_terms_mirror_and_downgrades`.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

from memory.db import session_scope
from memory.notes.models import Note
from memory.types import utcnow
from tests.integration.test_read_path import memory_user  # noqa: F401 - the fixture
from tests.support.helpers import mirror_ids_for_app_role, new_note, update_note

pytestmark = pytest.mark.integration

# xmin shows whether the row was rewritten.
MIRROR = (
    "SELECT index_terms::text AS terms, term_count, visibility, agent_id, domain, kind,"
    " status, expires_at, xmin::text AS x FROM note_terms WHERE note_id = :id"
)


def _mirror(note_id: uuid.UUID) -> Any:
    with session_scope() as session:
        return session.execute(text(MIRROR), {"id": note_id}).one_or_none()


def _note(tenant: str, user: str, **extra: Any) -> Note:
    return new_note(
        tenant,
        user,
        f"note {uuid.uuid4()}",
        index_terms="'beagl':1 'biscuit':2",
        term_count=2,
        **extra,
    )


def test_mirror_follows_the_notes_mirrored_columns(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    note = _note(tenant_id, user_id)
    pending = _note(tenant_id, user_id, status="pending")
    with session_scope() as session:
        session.add_all([note, pending])
    first = _mirror(note.id)
    assert first is not None and first.terms == "'beagl':1 'biscuit':2"
    assert _mirror(pending.id) is None  # not searchable yet
    with session_scope() as session:  # neither other columns nor the same values fire
        session.execute(
            text("UPDATE notes SET pinned = true, access_count = 3, domain = domain"
                 " WHERE id = :id"),
            {"id": note.id},
        )  # fmt: skip
    assert _mirror(note.id) == first
    later = utcnow() + timedelta(days=1)
    update_note(note.id, visibility="private", agent_id="other", domain="work", kind="decision")
    update_note(note.id, index_terms="'dog':1", term_count=1, expires_at=later)
    changed = _mirror(note.id)
    assert (changed.visibility, changed.agent_id, changed.domain, changed.kind) == (
        "private",
        "other",
        "work",
        "decision",
    )
    assert (changed.terms, changed.term_count, changed.expires_at) == ("'dog':1", 1, later)
    update_note(pending.id, status="active")
    assert _mirror(pending.id) is not None
    update_note(note.id, status="archived")  # archived notes are searchable when asked for
    assert _mirror(note.id).status == "archived"
    update_note(note.id, status="deleted")
    assert _mirror(note.id) is None
    update_note(note.id, status="active")
    assert _mirror(note.id) is not None
    update_note(note.id, valid_to=utcnow())  # a closed version is never searched
    assert _mirror(note.id) is None
    with session_scope() as session:
        session.execute(text("DELETE FROM notes WHERE id = :id"), {"id": pending.id})
    assert _mirror(pending.id) is None


def test_app_role_keeps_the_mirror_and_reads_only_its_rows(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    other = _note(tenant_id, f"u-{uuid.uuid4().hex[:10]}")
    own = _note(tenant_id, user_id)
    assert mirror_ids_for_app_role("note_terms", own, other) == {own.id}
    assert _mirror(own.id) is not None and _mirror(other.id) is not None


def test_bm25_follows_a_notes_access_columns_through_the_mirror(
    memory_user: tuple,  # noqa: F811 - the imported fixture
) -> None:
    from memory.access.policy import Viewer
    from memory.retrieval.candidates import SearchOptions, run_routes
    from memory.retrieval.scope import ReadScope

    user, _, tenant = memory_user
    viewer = Viewer(tenant_id=tenant, user_id=user, agent_id="helper")

    def bm25_found() -> set[uuid.UUID]:
        options = SearchOptions(routes=("bm25", "bm25_window"))
        with session_scope() as session:
            found = run_routes(session, ReadScope(viewer), "the beagle Biscuit", None, options)
        return set(found.get("bm25", {})) | set(found.get("bm25_window", {}))

    with session_scope() as session:
        biscuit, visibility, agent_id = session.execute(
            text(
                "SELECT id, visibility, agent_id FROM notes"
                " WHERE user_id = :u AND status = 'active' AND content LIKE '%Biscuit%'"
            ),
            {"u": user},
        ).one()
    assert biscuit in bm25_found()
    update_note(biscuit, visibility="private", agent_id="someone-else")
    try:
        assert biscuit not in bm25_found()  # another agent's private note
    finally:
        update_note(biscuit, visibility=visibility, agent_id=agent_id)
    assert biscuit in bm25_found()
    update_note(biscuit, expires_at=utcnow() - timedelta(minutes=1))
    try:
        assert biscuit not in bm25_found()  # expired
    finally:
        update_note(biscuit, expires_at=None)
    assert biscuit in bm25_found()
    # The routes read the mirror, not notes: without its row the note is not found.
    with session_scope() as session:
        session.execute(text("DELETE FROM note_terms WHERE note_id = :id"), {"id": biscuit})
    try:
        assert biscuit not in bm25_found()
    finally:
        update_note(biscuit, status="archived")  # the trigger writes the row again
        update_note(biscuit, status="active")
    assert biscuit in bm25_found()
