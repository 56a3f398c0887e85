"""Read statements compiled once per scope shape (`memory.db.CompiledStatement`): the values
of one call never carry into the next, and the statements behave as through the ORM."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select, text

from memory.access.policy import Viewer
from memory.db import CompiledStatement, session_scope
from memory.errors import TransientError
from memory.notes.lexicon import apply_terms, index_note_terms
from memory.notes.models import Note
from memory.retrieval import bm25 as b
from memory.retrieval.scope import ReadScope, SearchFilters
from memory.retrieval.text import analyse
from memory.types import id_in_param
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration


def _indexed(tenant: str, user: str, content: str, **fields: object) -> Note:
    note = new_note(tenant, user, content, **fields)
    apply_terms(note, {"own": analyse(content), "window": analyse(content)})
    return note


def _store(notes: list[Note]) -> None:
    with session_scope() as session:
        session.add_all(notes)
        index_note_terms(session=session, notes=notes)


def _bm25(viewer: Viewer, query: str, filters: SearchFilters | None = None) -> set[uuid.UUID]:
    with session_scope() as session:
        terms = b.load_query_terms(session, viewer, analyse(query))
        scope = ReadScope(viewer, filters or SearchFilters())
        return set(b.bm25_route(session, scope, terms, limit=50, window=False))


def test_each_user_gets_their_own_notes_through_one_compiled_statement(
    database_url: str, tenant_id: str
) -> None:
    users = [f"u-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    notes = {u: [_indexed(tenant_id, u, f"the heron count {i}") for i in range(3)] for u in users}
    _store([n for user_notes in notes.values() for n in user_notes])
    # Alternating users run the same cached statement with the other user's values.
    for user in users + users:
        assert _bm25(Viewer(tenant_id, user, None), "heron count") == {n.id for n in notes[user]}


def test_agents_of_one_shape_see_their_own_domains(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    work = [_indexed(tenant_id, user_id, "kestrel plan", visibility="scoped", domain="work")]
    health = [_indexed(tenant_id, user_id, "kestrel diet", visibility="scoped", domain="health")]
    _store(work + health)
    for _ in range(2):
        at_work = Viewer(tenant_id, user_id, "planner", frozenset({"work"}))
        at_clinic = Viewer(tenant_id, user_id, "coach", frozenset({"health", "sleep"}))
        assert _bm25(at_work, "kestrel") == {n.id for n in work}
        assert _bm25(at_clinic, "kestrel") == {n.id for n in health}


def test_filter_values_change_between_calls_of_one_shape(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    facts = [_indexed(tenant_id, user_id, "osprey nest", kind="stable")]
    prefs = [_indexed(tenant_id, user_id, "osprey prints", kind="preference")]
    _store(facts + prefs)
    viewer = Viewer(tenant_id, user_id, None)
    for _ in range(2):
        assert _bm25(viewer, "osprey", SearchFilters(kinds=("stable",))) == {n.id for n in facts}
        assert _bm25(viewer, "osprey", SearchFilters(kinds=("preference",))) == {
            n.id for n in prefs
        }


def test_an_expanding_in_is_refused() -> None:
    with pytest.raises(ValueError, match="ANY"):
        CompiledStatement(select(Note.id).where(Note.kind.in_(["stable"])))


def test_pending_changes_are_read_and_rows_are_named(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    from sqlalchemy import Uuid, bindparam

    statement = CompiledStatement(
        select(Note.id, Note.content).where(Note.id == bindparam("note_id", type_=Uuid))
    )
    note = new_note(tenant_id, user_id, "added, not yet flushed")
    with session_scope() as session:
        session.add(note)
        rows = statement.rows(session, {"note_id": note.id})
    assert [(row.id, row.content) for row in rows] == [(note.id, "added, not yet flushed")]


def test_a_statement_timeout_surfaces_as_through_the_orm(database_url: str) -> None:
    sleep = CompiledStatement(select(func.pg_sleep(0.5)))
    with pytest.raises(TransientError, match="statement timeout"), session_scope() as session:
        session.execute(text("SET LOCAL statement_timeout = 20"))
        sleep.rows(session)


def test_id_arrays_are_sent_in_binary_and_match_as_ids_or_strings(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    statement = CompiledStatement(
        select(Note.content).where(id_in_param(Note.id, "ids")).order_by(Note.content)
    )
    # The text form quotes every element through a regular expression; binary does not.
    assert "%(ids)b" in statement.sql and statement.id_arrays == ("ids",)
    notes = [new_note(tenant_id, user_id, f"heron {i}") for i in range(3)]
    _store(notes)
    with session_scope() as session:
        as_ids = statement.rows(session, {"ids": [n.id for n in notes[:2]]})
        as_strings = statement.rows(session, {"ids": [str(n.id) for n in notes[1:]]})
        none = statement.rows(session, {"ids": []})
    assert [r.content for r in as_ids] == ["heron 0", "heron 1"]
    assert [r.content for r in as_strings] == ["heron 1", "heron 2"]
    assert none == []
