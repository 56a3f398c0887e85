"""erasure: tombstones say who erased a memory and keep no content; erasures are tracked

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

- `tombstones.actor`: who forgot or erased the memory (a token, the CLI, the decay
  sweep); `content_hash` may be NULL: an erased memory keeps no hash of its content (a
  short secret's hash is as good as the secret to anyone who can guess its form).
- `erasures`: one row per erasure of a user (or, with no user, of a tenant): who asked,
  why, its progress per table, and at the end its report. While one is running for a
  user, captures for that user are dropped; its row stays as the record that it ran.

Both changes are metadata only: no table is rewritten.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "muma_app"
TENANT = "NULLIF(current_setting('muma.tenant_id', true), '')"


def upgrade() -> None:
    op.execute("ALTER TABLE tombstones ADD COLUMN actor varchar(160)")
    op.execute("ALTER TABLE tombstones ALTER COLUMN content_hash DROP NOT NULL")
    op.execute(
        """
        CREATE TABLE erasures (
            id uuid NOT NULL,
            tenant_id varchar(128) NOT NULL,
            user_id varchar(128),
            requested_by varchar(160) NOT NULL,
            reason text,
            status varchar(16) NOT NULL,
            progress jsonb NOT NULL DEFAULT '{}',
            report jsonb,
            started_at timestamptz NOT NULL,
            finished_at timestamptz,
            CONSTRAINT pk_erasures PRIMARY KEY (id),
            CONSTRAINT ck_erasures_status CHECK (status IN ('running', 'done'))
        )
        """
    )
    op.execute(
        "CREATE INDEX ix_erasures_running ON erasures (tenant_id, user_id)"
        " WHERE status = 'running'"
    )
    # Read-only for the API's user-scoped transactions, per tenant (as dead_letters).
    op.execute(f"GRANT SELECT ON erasures TO {APP_ROLE}")
    op.execute("ALTER TABLE erasures ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY muma_app_scope ON erasures AS PERMISSIVE FOR ALL TO {APP_ROLE}"
        f" USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
    )


def downgrade() -> None:
    op.execute("DROP TABLE erasures")
    op.execute("UPDATE tombstones SET content_hash = '' WHERE content_hash IS NULL")
    op.execute("ALTER TABLE tombstones ALTER COLUMN content_hash SET NOT NULL")
    op.execute("ALTER TABLE tombstones DROP COLUMN actor")
