"""The access rules agree everywhere: SQL (`visible_clause`, and `bound_visible_clause`
as the read path's compiled statements run it), notes (`can_see`) and bare attributes
(`can_see_attributes`, used for events) give the same answer for every case."""

from __future__ import annotations

import itertools
import uuid

import pytest
from sqlalchemy import select

from memory.access.policy import (
    Viewer,
    bound_visible_clause,
    can_see,
    can_see_attributes,
    viewer_params,
    viewer_shape,
    visible_clause,
)
from memory.db import CompiledStatement, session_scope
from memory.notes.models import Note
from memory.types import VISIBILITIES, id_in_param

pytestmark = pytest.mark.integration


def test_sql_notes_and_attributes_agree(database_url: str, tenant_id: str, user_id: str) -> None:
    cases = list(itertools.product(("a1", "a2"), VISIBILITIES, ("finance", "health")))
    notes = []
    for author, visibility, domain in cases:
        note_id = uuid.uuid4()
        notes.append(
            Note(
                id=note_id,
                lineage_id=note_id,
                tenant_id=tenant_id,
                user_id=user_id,
                agent_id=author,
                content=f"{author} {visibility} {domain}",
                visibility=visibility,
                domain=domain,
                status="active",
            )
        )
    foreign = Note(
        id=uuid.uuid4(), lineage_id=uuid.uuid4(), tenant_id=tenant_id, user_id="other",
        agent_id="a1", content="another user's note", visibility="open", domain="health",
    )  # fmt: skip
    viewers = [
        Viewer(tenant_id, user_id, None),
        Viewer(tenant_id, user_id, "a1"),
        Viewer(tenant_id, user_id, "a3", frozenset({"health"})),
        Viewer(tenant_id, user_id, "a3", frozenset(), can_see_private=True),
        Viewer(tenant_id, user_id, "a2", frozenset({"finance", "health"}), True),
    ]
    with session_scope() as session:
        session.add_all([*notes, foreign])
        session.flush()
        all_ids = [n.id for n in notes] + [foreign.id]
        for viewer in viewers:
            in_sql = set(
                session.scalars(select(Note.id).where(Note.id.in_(all_ids), visible_clause(viewer)))
            )
            bound = CompiledStatement(
                select(Note.id).where(
                    id_in_param(Note.id, "ids"), bound_visible_clause(viewer_shape(viewer))
                )
            )
            compiled = {
                row.id for row in bound.rows(session, {"ids": all_ids, **viewer_params(viewer)})
            }
            by_note = {n.id for n in [*notes, foreign] if can_see(viewer, n)}
            by_attributes = {
                n.id
                for n in notes
                if can_see_attributes(
                    viewer, agent_id=n.agent_id, visibility=n.visibility, domain=n.domain
                )
            }
            assert in_sql == compiled == by_note == by_attributes, viewer
            assert foreign.id not in in_sql
            if not viewer.user_level:
                assert all(n.visibility != "user-only" for n in notes if n.id in in_sql)
    # Fail closed on attributes the rules do not know.
    agent = viewers[1]
    assert not can_see_attributes(agent, agent_id="a1", visibility=None, domain=None)
    assert not can_see_attributes(agent, agent_id="a1", visibility="public", domain=None)
    assert can_see_attributes(viewers[0], agent_id=None, visibility=None, domain=None)
