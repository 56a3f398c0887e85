"""Property: no read route returns a note the visibility rules forbid, none misses one
they allow (within top_k), and nothing ever crosses users or tenants.

Notes are written straight into PostgreSQL (hashing embedder, real tsvectors and lexicon
statistics), so each example is fast; the routes under test are the real SQL ones.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.access.policy import Viewer, can_see
from memory.clients.embedder import HashEmbedder
from memory.config import get_settings
from memory.db import session_scope
from memory.notes.lexicon import apply_terms, index_note_terms, note_terms
from memory.notes.models import Note
from memory.retrieval.routes import SearchFilters
from memory.retrieval.service import ALL_ROUTES, SearchOptions, search_notes
from memory.types import VISIBILITIES, utcnow

pytestmark = pytest.mark.integration

EMBEDDER = HashEmbedder(384)
USERS = ("alice", "bob")
AGENTS = ("planner", "coder", "doctor")
DOMAINS = ("work", "health", "finance")
COMMON = "zebra"  # a word every note holds, so one query matches them all

note_spec = st.tuples(
    st.sampled_from(USERS),
    st.sampled_from(AGENTS),
    st.sampled_from(DOMAINS),
    st.sampled_from(VISIBILITIES),
    st.text(alphabet="abcdefgh ", min_size=3, max_size=20),
)
viewer_spec = st.tuples(
    st.sampled_from(USERS),
    st.one_of(st.none(), st.sampled_from(AGENTS)),
    st.frozensets(st.sampled_from(DOMAINS), max_size=2),
    st.booleans(),
)


def _insert(tenant_id: str, specs: list[tuple[str, str, str, str, str]]) -> list[Note]:
    notes = []
    now = utcnow()
    with session_scope() as session:
        for user, agent, domain, visibility, words in specs:
            note_id = uuid.uuid4()
            content = f"{COMMON} {words} {agent} INC-{note_id.hex[:6]}"
            note = Note(
                id=note_id,
                lineage_id=note_id,
                tenant_id=tenant_id,
                user_id=user,
                agent_id=agent,
                content=content,
                index_text=content,
                window_text=content,
                kind="episodic",
                domain=domain,
                visibility=visibility,
                status="active",
                importance=0.5,
                occurred_at=now,
                created_at=now,
                valid_from=now,
                access_times=[now],
                access_count=1,
                first_access_at=now,
                last_access_at=now,
                half_life_hours=168.0,
                keywords=[],
                tags=[],
                metadata_={},
                embedding=EMBEDDER.embed_one(content),
                window_embedding=EMBEDDER.embed_one(content),
                embedding_model=EMBEDDER.model_id,
            )
            apply_terms(note, note_terms(note))
            session.add(note)
            notes.append(note)
        session.flush()
        index_note_terms(session=session, notes=notes)
    return notes


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(specs=st.lists(note_spec, min_size=1, max_size=12), viewer_args=viewer_spec)
def test_routes_return_exactly_what_the_rules_allow(
    database_url: str,
    specs: list[tuple[str, str, str, str, str]],
    viewer_args: tuple[str, str | None, frozenset[str], bool],
) -> None:
    tenant_id = f"prop-{uuid.uuid4().hex[:8]}"
    other_tenant = f"prop-{uuid.uuid4().hex[:8]}"
    notes = _insert(tenant_id, specs)
    _insert(other_tenant, specs)  # the same notes under another tenant must never leak
    user, agent, domains, private = viewer_args
    viewer = Viewer(tenant_id, user, agent, domains, private)
    allowed = {n.id for n in notes if can_see(viewer, n)}
    query = f"{COMMON} {specs[0][4]}"
    for route in ALL_ROUTES:
        if route == "links":
            continue
        # The window route scores the other routes' candidates: pair it with dense.
        routes = ("dense", route) if route == "dense_window" else (route,)
        options = SearchOptions(routes=routes, mmr=False)
        with session_scope() as session:
            hits = search_notes(
                session=session,
                viewer=viewer,
                query=query,
                vector=EMBEDDER.embed_one(query),
                top_k=50,
                settings=get_settings(),
                filters=SearchFilters(),
                options=options,
            )
        returned = {h.note.id for h in hits}
        assert returned <= allowed, f"{route} returned notes the rules forbid"
        if route in ("dense", "dense_window", "bm25", "bm25_window"):
            assert returned == allowed, f"{route} missed allowed notes"


def test_user_only_notes_are_invisible_to_every_agent(database_url: str) -> None:
    tenant_id = f"prop-{uuid.uuid4().hex[:8]}"
    [note] = _insert(tenant_id, [("alice", "doctor", "health", "user-only", "blood test")])
    for agent in AGENTS:
        viewer = Viewer(tenant_id, "alice", agent, frozenset(DOMAINS), True)
        assert not can_see(viewer, note)
        with session_scope() as session:
            hits = search_notes(
                session=session,
                viewer=viewer,
                query="blood test zebra",
                vector=EMBEDDER.embed_one("blood test"),
                top_k=10,
                settings=get_settings(),
            )
        assert note.id not in {h.note.id for h in hits}
    user_level = Viewer(tenant_id, "alice", None)
    with session_scope() as session:
        hits = search_notes(
            session=session,
            viewer=user_level,
            query="blood test zebra",
            vector=EMBEDDER.embed_one("blood test"),
            top_k=10,
            settings=get_settings(),
        )
    assert note.id in {h.note.id for h in hits}
