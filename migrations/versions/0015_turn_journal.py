"""turn journal: the memories each /v1/context answer injected, with scores and why

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

- `journal_injections`: one row per memory an answer injected (not for dry runs): its
  tenant, user, agent and session, when, the note's id, rank, score, the explanation's
  route ranks and numbers, and its origin, trust and candidate mark. No prompt and no
  memory text. Pruned after `journal.retention_days`; forgetting a memory deletes the
  rows naming it; erasing a user deletes theirs.

Row-level security: readable by `muma_app` for its tenant and user only (the journal is
read under the caller's scope); only the owner writes it (the API's background task and
the pruning task run as the owner).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "muma_app"
TENANT = "NULLIF(current_setting('muma.tenant_id', true), '')"
USER = "NULLIF(current_setting('muma.user_id', true), '')"
SCOPE = f"tenant_id = {TENANT} AND user_id = {USER}"


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE journal_injections (
            id bigint GENERATED ALWAYS AS IDENTITY,
            injection_id uuid NOT NULL,
            tenant_id varchar(128) NOT NULL,
            user_id varchar(128) NOT NULL,
            agent_id varchar(128),
            session_id varchar(128),
            at timestamptz NOT NULL,
            note_id uuid NOT NULL,
            rank smallint NOT NULL,
            score double precision,
            explanation jsonb NOT NULL DEFAULT '{}',
            origin varchar(16) NOT NULL,
            trust varchar(8) NOT NULL,
            candidate boolean NOT NULL DEFAULT false,
            CONSTRAINT pk_journal_injections PRIMARY KEY (id)
        )
        """
    )
    op.execute(
        "CREATE INDEX ix_journal_injections_scope ON journal_injections (tenant_id, user_id, at)"
    )
    op.execute("CREATE INDEX ix_journal_injections_note ON journal_injections (note_id)")
    op.execute("CREATE INDEX ix_journal_injections_at ON journal_injections (at)")
    op.execute(f"GRANT SELECT ON journal_injections TO {APP_ROLE}")
    op.execute("ALTER TABLE journal_injections ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY muma_app_scope ON journal_injections AS PERMISSIVE FOR ALL"
        f" TO {APP_ROLE} USING ({SCOPE}) WITH CHECK ({SCOPE})"
    )


def downgrade() -> None:
    op.execute("DROP TABLE journal_injections")
