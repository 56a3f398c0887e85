"""PostgreSQL row-level security (migration 0002) under the API's access rules.

As the `muma_app` role a transaction sees and writes only the rows of the tenant and user
in its settings, whatever its SQL says; with no settings it sees nothing. The API binds
every user-scoped transaction to the viewer (`resolve_viewer`, `scoped_session_for`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from memory.access.tokens import Principal
from memory.api.identity import resolve_viewer
from memory.db import APP_ROLE, scope_session, scoped_session_for, session_scope
from memory.db_url import sqlalchemy_url
from memory.episodes.models import Episode
from memory.links.models import Link
from memory.notes.models import Note, NoteSource
from memory.ops.audit import record_event
from memory.ops.migrations import downgrade_database, upgrade_database
from memory.retrieval.read import rls_checked
from memory.retrieval.service import SearchHit
from tests.conftest import make_token
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration

SCOPED_TABLES = ("notes", "episodes", "links", "note_sources", "events", "note_vectors")


@dataclass(frozen=True)
class World:
    tenant: str
    other_tenant: str
    a: str
    b: str
    notes: dict[str, list[uuid.UUID]]  # "a", "b", "x" (user a in the other tenant)


def _note(tenant: str, user: str, content: str) -> Note:
    note_id = uuid.uuid4()
    return Note(
        id=note_id,
        lineage_id=note_id,
        tenant_id=tenant,
        user_id=user,
        agent_id="main",
        content=content,
        visibility="open",
        domain="general",
        status="active",
        embedding=[1.0] + [0.0] * 383,  # mirrored into note_vectors by the trigger (0004)
    )


def _episode(tenant: str, user: str) -> Episode:
    return Episode(
        id=uuid.uuid4(),
        tenant_id=tenant,
        user_id=user,
        agent_id="main",
        session_id="s1",
        role="user",
        content=f"episode of {user}",
        status="done",
    )


def _seed(session: Session, tenant: str, user: str, count: int) -> list[uuid.UUID]:
    """`count` notes with provenance, a link between the first two, and an audit event."""
    notes = [_note(tenant, user, f"{user} fact {i}") for i in range(count)]
    episode = _episode(tenant, user)
    session.add_all([*notes, episode])
    session.flush()
    session.add_all([NoteSource(note_id=n.id, episode_id=episode.id) for n in notes])
    if count > 1:
        session.add(
            Link(
                id=uuid.uuid4(),
                tenant_id=tenant,
                user_id=user,
                source_id=notes[0].id,
                target_id=notes[1].id,
                kind="related",
                weight=0.9,
                created_by="user",
            )
        )
    record_event(
        session=session,
        tenant_id=tenant,
        user_id=user,
        actor="test",
        action="test.seeded",
        entity_type="user",
    )
    return [n.id for n in notes]


@pytest.fixture()
def world(database_url: str) -> World:
    tenant, other_tenant = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    a, b = f"u-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    with session_scope() as session:
        notes = {
            "a": _seed(session, tenant, a, 3),
            "b": _seed(session, tenant, b, 2),
            # The same user id in another tenant is another person.
            "x": _seed(session, other_tenant, a, 2),
        }
    return World(tenant, other_tenant, a, b, notes)


def _rows(session: Session, table: str) -> int:
    return int(session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_app_role_sees_only_its_tenant_and_user(world: World) -> None:
    with scoped_session_for(world.tenant, world.a) as session:
        assert session.execute(text("SELECT current_user")).scalar_one() == APP_ROLE
        owners = set(session.execute(text("SELECT tenant_id, user_id FROM notes")).tuples())
        ids = set(session.execute(text("SELECT id FROM notes")).scalars())
        assert owners == {(world.tenant, world.a)}
        assert ids == set(world.notes["a"])
        for table in ("episodes", "links", "events", "note_vectors"):
            scopes = set(session.execute(text(f"SELECT tenant_id, user_id FROM {table}")).tuples())
            assert scopes == {(world.tenant, world.a)}, table
        sourced = set(session.execute(text("SELECT note_id FROM note_sources")).scalars())
        assert sourced == set(world.notes["a"])
        # An explicit filter naming another user does not get around the policy.
        named = text("SELECT count(*) FROM notes WHERE user_id = :u OR tenant_id = :t")
        assert session.execute(named, {"u": world.b, "t": world.other_tenant}).scalar() == 0


def test_unset_or_empty_identity_sees_nothing(world: World) -> None:
    with session_scope() as session:
        assert _rows(session, "notes") >= 7  # the owner sees everyone's rows
        session.execute(text(f"SET LOCAL ROLE {APP_ROLE}"))
        for table in (*SCOPED_TABLES, "agents", "dead_letters", "conflicts", "lexicon"):
            assert _rows(session, table) == 0, table
        session.execute(text("SELECT set_config('muma.tenant_id', '', true)"))
        session.execute(text("SELECT set_config('muma.user_id', '', true)"))
        for table in SCOPED_TABLES:
            assert _rows(session, table) == 0, table
    with pytest.raises(ProgrammingError, match="permission denied"), session_scope() as session:
        scope_session(session, tenant_id=world.tenant, user_id=world.a)
        session.execute(text("SELECT count(*) FROM api_tokens"))


def test_settings_end_with_the_transaction(world: World) -> None:
    for _ in range(3):  # pooled connections are reused: nothing may carry over
        with scoped_session_for(world.tenant, world.a) as session:
            assert _rows(session, "notes") == 3
        with session_scope() as session:
            assert session.execute(text("SELECT current_user")).scalar_one() != APP_ROLE
            tenant = session.execute(text("SELECT current_setting('muma.tenant_id', true)"))
            assert tenant.scalar() in (None, "")
            assert _rows(session, "notes") >= 7


def _refused(statement: str, params: dict[str, object], world: World) -> None:
    with (
        pytest.raises(ProgrammingError, match="row-level security"),
        scoped_session_for(world.tenant, world.a) as session,
    ):
        session.execute(text(statement), params)


def test_writes_for_another_user_or_tenant_are_refused(world: World) -> None:
    insert = (
        "INSERT INTO notes (id, lineage_id, version, tenant_id, user_id, agent_id, content,"
        " keywords, tags, kind, domain, visibility, pinned, status, importance, metadata,"
        " occurred_at, created_at, updated_at, valid_from, access_times, access_count,"
        " first_access_at, last_access_at, half_life_hours, term_count, window_term_count)"
        " VALUES (:id, :id, 1, :t, :u, 'main', 'planted', '{}', '{}', 'stable', 'general',"
        " 'open', false, 'active', 0.5, '{}', now(), now(), now(), now(), '{}', 0, now(),"
        " now(), 168, 0, 0)"
    )
    _refused(insert, {"id": uuid.uuid4(), "t": world.tenant, "u": world.b}, world)
    _refused(insert, {"id": uuid.uuid4(), "t": world.other_tenant, "u": world.a}, world)
    # Moving one's own row to another user is refused by the policy's WITH CHECK.
    move = "UPDATE notes SET user_id = :u WHERE id = :id"
    _refused(move, {"u": world.b, "id": world.notes["a"][0]}, world)
    audit = (
        "INSERT INTO events (tenant_id, user_id, actor, action, entity_type, data, created_at)"
        " VALUES (:t, :u, 'x', 'planted', 'user', '{}', now())"
    )
    _refused(audit, {"t": world.tenant, "u": world.b}, world)
    with scoped_session_for(world.tenant, world.a) as session:
        # Another user's rows are invisible to UPDATE and DELETE: nothing happens.
        params = {"ids": world.notes["b"] + world.notes["x"]}
        changed = session.execute(
            text("UPDATE notes SET content = 'overwritten' WHERE id = ANY(:ids)"), params
        )
        deleted = session.execute(text("DELETE FROM notes WHERE id = ANY(:ids)"), params)
        assert changed.rowcount == 0 and deleted.rowcount == 0
        # Its own rows stay writable.
        own = session.execute(
            text("UPDATE notes SET pinned = true WHERE id = :id"), {"id": world.notes["a"][0]}
        )
        assert own.rowcount == 1
    with session_scope() as session:
        others = [session.get(Note, i) for i in world.notes["b"] + world.notes["x"]]
        assert all(n is not None and n.content != "overwritten" for n in others)


def test_resolve_viewer_binds_the_request_transaction(world: World) -> None:
    principal = Principal(uuid.uuid4(), "admin", world.tenant)
    with session_scope() as session:
        resolve_viewer(session=session, principal=principal, user_id=world.a, agent_id="x")
        assert session.execute(text("SELECT current_user")).scalar_one() == APP_ROLE
        visible = set(session.execute(text("SELECT id FROM notes")).scalars())
        assert visible == set(world.notes["a"])
        assert session.get(Note, world.notes["b"][0]) is None  # not even loadable by id
    # The search route ranks as the owner, then row-level security re-checks each hit.
    with session_scope() as session:
        viewer = resolve_viewer(
            session=session, principal=principal, user_id=world.a, agent_id=None, scope=False
        )
        hits = [
            SearchHit(note=session.get(Note, i), score=1.0, relevance=1.0, activation=None)
            for i in (world.notes["b"][0], world.notes["x"][0], world.notes["a"][1])
        ]
        kept, sources = rls_checked(session, viewer, hits)
        assert [h.note.id for h in kept] == [world.notes["a"][1]]
        assert set(sources) == {world.notes["a"][1]}


@pytest.fixture()
def admin_headers(api_client: TestClient, world: World) -> dict[str, str]:
    return bearer(make_token("admin", world.tenant))


def test_api_reads_still_work_under_rls(
    api_client: TestClient, world: World, admin_headers: dict[str, str]
) -> None:
    a = {"user_id": world.a}
    listed = api_client.get("/v1/memories", params=a, headers=admin_headers)
    assert listed.status_code == 200, listed.text
    assert {i["id"] for i in listed.json()["items"]} == {str(i) for i in world.notes["a"]}
    one = api_client.get(f"/v1/memories/{world.notes['a'][0]}", params=a, headers=admin_headers)
    assert one.status_code == 200 and one.json()["links"], one.text
    foreign = api_client.get(f"/v1/memories/{world.notes['b'][0]}", params=a, headers=admin_headers)
    assert foreign.status_code == 404
    stats = api_client.get("/v1/stats", params=a, headers=admin_headers)
    assert stats.status_code == 200, stats.text
    exported = api_client.get("/v1/export", params={**a, "format": "jsonl"}, headers=admin_headers)
    assert exported.status_code == 200, exported.text
    assert all(str(i) in exported.text for i in world.notes["a"])
    assert not any(str(i) in exported.text for i in world.notes["b"] + world.notes["x"])
    patched = api_client.patch(
        f"/v1/memories/{world.notes['a'][2]}",
        json={**a, "pinned": True, "tags": ["rls"]},
        headers=admin_headers,
    )
    assert patched.status_code == 200, patched.text
    searched = api_client.post(
        "/v1/search", json={**a, "query": "fact", "dry_run": True}, headers=admin_headers
    )
    assert searched.status_code == 200, searched.text


def test_every_identity_table_has_a_policy(database_url: str) -> None:
    engine = create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as conn:
            identity_tables = set(
                conn.execute(
                    text(
                        "SELECT table_name FROM information_schema.columns"
                        " WHERE table_schema = current_schema() AND column_name = 'user_id'"
                    )
                ).scalars()
            )
            # Partition -> whether muma_app holds any privilege on it.
            partitions = dict(
                conn.execute(
                    text(
                        "SELECT relname, has_table_privilege(:role, oid,"
                        " 'SELECT, INSERT, UPDATE, DELETE') FROM pg_class WHERE relispartition"
                    ),
                    {"role": APP_ROLE},
                ).all()
            )
            protected = set(
                conn.execute(
                    text(
                        "SELECT c.relname FROM pg_class c JOIN pg_policy p ON p.polrelid = c.oid"
                        " WHERE c.relrowsecurity AND CAST(:role AS regrole) = ANY(p.polroles)"
                    ),
                    {"role": APP_ROLE},
                ).scalars()
            )
            role = conn.execute(
                text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :r"),
                {"r": APP_ROLE},
            ).one()
    finally:
        engine.dispose()
    # api_tokens has a user_id but muma_app holds no privilege on it at all; the
    # partitions of note_vectors neither (it reads them through the parent's policy).
    assert identity_tables - {"api_tokens"} - set(partitions) <= protected
    assert partitions and not any(partitions.values())
    assert {"note_sources", "note_vectors"} <= protected
    assert tuple(role) == (False, False)


def _policies(url: str) -> tuple[int, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            enabled = conn.execute(text("SELECT count(*) FROM pg_class WHERE relrowsecurity"))
            policies = conn.execute(text("SELECT count(*) FROM pg_policy"))
            return int(enabled.scalar_one()), int(policies.scalar_one())
    finally:
        engine.dispose()


def test_migration_downgrades_and_upgrades_again(scratch_database: str) -> None:
    upgrade_database("head", url=scratch_database)
    # with note_vectors (0004), note_window_vectors (0008), note_terms (0009) and
    # note_contributions (0012), erasures (0013) and journal_injections (0015)
    assert _policies(scratch_database) == (18, 18)
    downgrade_database("0001", url=scratch_database)
    assert _policies(scratch_database) == (0, 0)
    upgrade_database("head", url=scratch_database)
    assert _policies(scratch_database) == (18, 18)
