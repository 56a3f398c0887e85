"""The term indexes keyed per user (migration 0005): a BM25 route's index lookup returns
only the viewer's notes, however many other users hold the same term."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest
from sqlalchemy import select, text

from memory.access.policy import Viewer
from memory.db import session_scope
from memory.notes.lexicon import apply_terms, user_terms_match
from memory.notes.models import Note, NoteTerms
from memory.retrieval import bm25 as b
from memory.retrieval import routes as r
from memory.retrieval.text import analyse
from tests.support.helpers import new_note

pytestmark = pytest.mark.integration


def _note(tenant: str, user: str, content: str, window: str) -> Note:
    note = new_note(tenant, user, content)
    apply_terms(note, {"own": analyse(content), "window": analyse(window)})
    return note


def _index_rows(statement: Any, index_name: str) -> int:
    """Rows the index named (or prefixed) `index_name` returned when `statement` ran with
    sequential scans off."""
    with session_scope() as session:
        session.execute(text("SET LOCAL enable_seqscan = off"))
        compiled = statement.compile(dialect=session.get_bind().dialect)
        plan = (
            session.connection()
            .exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {compiled}", compiled.params)
            .scalar_one()
        )
    plan = json.loads(plan) if isinstance(plan, str) else plan
    found: list[int] = []

    def walk(node: dict[str, Any]) -> None:
        if str(node.get("Index Name", "")).startswith(index_name):
            found.append(int(node["Actual Rows"]))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    assert found, f"{index_name} not used"
    return sum(found)


def test_keys_are_the_users_prefix_and_the_lexeme(database_url: str) -> None:
    with session_scope() as session:
        keys = session.execute(
            text("SELECT note_user_lexemes('t1', 'u1', CAST('zebra:1 apple:2,3' AS tsvector))")
        ).scalar_one()
    prefix = hashlib.md5(b"t1/u1").hexdigest()[:12]
    assert sorted(keys) == [f"{prefix}:apple", f"{prefix}:zebra"]


def test_a_term_lookup_returns_only_the_viewers_notes(database_url: str, tenant_id: str) -> None:
    mine, other = f"u-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    with session_scope() as session:
        session.add_all(
            [_note(tenant_id, mine, f"the okapi number {i}", "okapi window") for i in range(3)]
            + [_note(tenant_id, other, f"an okapi here {i}", "okapi window") for i in range(40)]
            + [_note(tenant_id, mine, "nothing relevant", "still nothing")]
        )
    for column, index_name in (
        (Note.index_terms, "ix_notes_user_index_terms"),
        # The BM25 routes' mirror (0009): one index per partition, named after it.
        (NoteTerms.index_terms, "note_terms_p"),
        (NoteTerms.window_terms, "note_terms_p"),
    ):
        match = user_terms_match(column, tenant_id=tenant_id, user_id=mine, terms=["okapi"])
        statement = select(column.class_.tenant_id).where(match)
        # The global index this replaced returned all 43 notes holding the term.
        assert _index_rows(statement, index_name) == 3

    viewer = Viewer(tenant_id, mine, None)
    with session_scope() as session:
        terms = b.load_query_terms(session, viewer, analyse("okapi numbers"))
        terms.match = {"own": ["okapi"], "window": ["okapi"]}
        terms.idf = {"own": {"okapi": 1.0}, "window": {"okapi": 1.0}}
        terms.avg_len = {"own": 3.0, "window": 2.0}
        scope = r.ReadScope(viewer)
        own = b.bm25_route(session, scope, terms, limit=10, window=False)
        window = b.bm25_route(session, scope, terms, limit=10, window=True)
        expected = set(
            session.scalars(
                select(Note.id).where(Note.user_id == mine, Note.content.like("%okapi%"))
            )
        )
    assert set(own) == expected and set(window) == expected


def test_own_route_with_only_common_terms_scores_notes_holding_the_two_rarest(
    database_url: str, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When even the rarest query term is in more than MATCH_MAX_NOTES notes, the own-text
    route scores the notes holding both of the two rarest terms; with a single term, at
    most MATCH_MAX_NOTES of its notes."""
    from memory.notes.lexicon import index_note_terms

    user = f"u-{uuid.uuid4().hex[:8]}"
    texts = ["okapi zebra one", "okapi zebra two"] + [f"okapi alone {i}" for i in range(4)]
    texts += [f"zebra alone {i}" for i in range(3)]
    notes = [_note(tenant_id, user, t, t) for t in texts]
    with session_scope() as session:
        session.add_all(notes)
        index_note_terms(session=session, notes=notes)
    viewer = Viewer(tenant_id, user, None)
    scope = r.ReadScope(viewer)

    def own(query: str) -> set[uuid.UUID]:
        with session_scope() as session:
            terms = b.load_query_terms(session, viewer, analyse(query))
            return set(b.bm25_route(session, scope, terms, limit=50, window=False))

    with_both = {n.id for n in notes[:2]}
    with_okapi = {n.id for n in notes if "okapi" in n.content}
    assert own("okapi zebra") == {n.id for n in notes}
    monkeypatch.setattr(b, "MATCH_MAX_NOTES", 3)
    assert own("okapi zebra") == with_both
    capped = own("okapi")
    assert len(capped) == 3 and capped <= with_okapi
