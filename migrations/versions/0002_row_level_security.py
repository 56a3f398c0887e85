"""row-level security: the API's user-scoped transactions run as `muma_app`

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Defence in depth under the query-level access rules (DESIGN.md §7). The API's user-scoped
request transactions run `SET LOCAL ROLE muma_app` and set `muma.tenant_id` and
`muma.user_id` (transaction-local, memory/db.py `scope_session`). `muma_app` is not the
owner of any table and has no BYPASSRLS, so PostgreSQL itself filters every row:

- user-scoped tables: visible and writable only where tenant_id and user_id equal the
  settings (`events` rows without a user are invisible to it);
- note_sources (no identity columns): only rows whose note is visible;
- agents and dead_letters (tenant-level): read-only, the setting's tenant only;
- api_tokens: no privilege at all (authentication runs on the owner connection).

Fails closed: an unset or empty setting compares as NULL and matches no row; a table
`muma_app` holds no grant on raises an error instead of answering. The table owner
(workers, CLI, beat, admin routes) bypasses these policies, as does a superuser.
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "muma_app"
TENANT = "NULLIF(current_setting('muma.tenant_id', true), '')"
USER = "NULLIF(current_setting('muma.user_id', true), '')"
SCOPE = f"tenant_id = {TENANT} AND user_id = {USER}"
# table -> (privileges, policy expression)
USER_TABLES = {
    "notes": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "episodes": ("SELECT, INSERT, UPDATE", SCOPE),
    "links": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "conflicts": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "transactive_index": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "lexicon": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "lexicon_totals": ("SELECT, INSERT, UPDATE, DELETE", SCOPE),
    "tombstones": ("SELECT, INSERT", SCOPE),
    # The audit log is append-only for the API.
    "events": ("SELECT, INSERT", SCOPE),
    # RLS on notes applies inside the policy's own subquery.
    "note_sources": (
        "SELECT, INSERT, DELETE",
        "EXISTS (SELECT 1 FROM notes n WHERE n.id = note_sources.note_id)",
    ),
    "agents": ("SELECT", f"tenant_id = {TENANT}"),
    "dead_letters": ("SELECT", f"tenant_id = {TENANT}"),
}
POLICY = "muma_app_scope"

CREATE_ROLE = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
        CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
EXCEPTION WHEN duplicate_object THEN
    NULL;  -- created concurrently by a migration of another database in this cluster
END $$;
"""
# The migrating user (the API's login role) must be able to SET ROLE to it. PostgreSQL 16+
# grants a role's creator ADMIN only, so ask for SET explicitly there.
GRANT_MEMBERSHIP = f"""
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 160000 THEN
        IF NOT pg_has_role(current_user, '{APP_ROLE}', 'SET') THEN
            EXECUTE format('GRANT {APP_ROLE} TO %I WITH SET TRUE', current_user);
        END IF;
    ELSIF NOT pg_has_role(current_user, '{APP_ROLE}', 'MEMBER') THEN
        EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
    END IF;
END $$;
"""
# Roles are cluster-wide: another database's grants keep it alive, which is fine.
DROP_ROLE = f"""
DO $$
BEGIN
    DROP ROLE IF EXISTS {APP_ROLE};
EXCEPTION WHEN dependent_objects_still_exist OR insufficient_privilege THEN
    RAISE NOTICE 'role {APP_ROLE} kept: still used elsewhere or not ours to drop';
END $$;
"""


def upgrade() -> None:
    op.execute(CREATE_ROLE)
    op.execute(GRANT_MEMBERSHIP)
    op.execute(f"GRANT USAGE ON SCHEMA {_schema()} TO {APP_ROLE}")
    # Identity columns (episodes.seq, events.id) draw from sequences on INSERT.
    op.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {_schema()} TO {APP_ROLE}")
    for table, (privileges, expression) in USER_TABLES.items():
        op.execute(f"GRANT {privileges} ON {table} TO {APP_ROLE}")
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {POLICY} ON {table} AS PERMISSIVE FOR ALL TO {APP_ROLE}"
            f" USING ({expression}) WITH CHECK ({expression})"
        )


def downgrade() -> None:
    for table in USER_TABLES:
        op.execute(f"DROP POLICY IF EXISTS {POLICY} ON {table}")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        op.execute(f"REVOKE ALL ON {table} FROM {APP_ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {_schema()} FROM {APP_ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA {_schema()} FROM {APP_ROLE}")
    op.execute(DROP_ROLE)


def _schema() -> str:
    """The schema the tables live in (quoted), normally `public`."""
    name = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    return '"' + str(name).replace('"', '""') + '"'
