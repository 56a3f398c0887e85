"""origin and trust: where every episode and note came from; memory candidates

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

- `episodes.origin`, `episodes.origin_ref`: who put the turn into the conversation (the
  user, the assistant, a named tool, a web page or file with its URL or path, another
  participant, an explicit write, an import, filesystem sync) (memory.trust.origin).
- `notes.origin`, `notes.origin_ref`, `notes.trust`: the same for each note, with the
  trust level that followed from it when it was written; `notes.instruction_like`: its
  text addresses the assistant or claims a standing order (memory.trust.instructions);
  `notes.review`: 'candidate' while it waits for the user's or an admin's approval.

The new columns' constant defaults are metadata only. Existing rows are backfilled from
their episodes' role and capture path: only episodes and notes that did not come from
the user's own chat turns are rewritten.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORIGIN_OF_EPISODE = """
    CASE
        WHEN e.source = 'explicit' THEN 'agent'
        WHEN e.source IN ('import', 'sync') THEN e.source
        WHEN e.role = 'tool' AND (e.metadata ? 'url' OR lower(coalesce(e.speaker, ''))
             IN ('web_fetch', 'fetch', 'browser', 'web_search', 'browse', 'http')) THEN 'web'
        WHEN e.role = 'tool' AND (e.metadata ? 'file_path' OR e.metadata ? 'path') THEN 'file'
        WHEN e.role = 'tool' THEN 'tool'
        WHEN e.role IN ('assistant', 'system') THEN e.role
        ELSE 'user'
    END
"""
# The default trust of each origin when this migration ran (memory.trust.settings).
TRUST_OF_ORIGIN = """
    CASE origin WHEN 'user' THEN 'high'
        WHEN 'tool' THEN 'low' WHEN 'web' THEN 'low' WHEN 'file' THEN 'low'
        WHEN 'participant' THEN 'low' ELSE 'medium' END
"""


def upgrade() -> None:
    op.execute(
        "ALTER TABLE episodes ADD COLUMN origin varchar(16) NOT NULL DEFAULT 'user',"
        " ADD COLUMN origin_ref varchar(512)"
    )
    op.execute(
        "ALTER TABLE notes ADD COLUMN origin varchar(16) NOT NULL DEFAULT 'user',"
        " ADD COLUMN origin_ref varchar(512),"
        " ADD COLUMN trust varchar(8) NOT NULL DEFAULT 'high',"
        " ADD COLUMN instruction_like boolean NOT NULL DEFAULT false,"
        " ADD COLUMN review varchar(16),"
        " ADD CONSTRAINT ck_notes_trust CHECK (trust IN ('high', 'medium', 'low')),"
        " ADD CONSTRAINT ck_notes_review CHECK (review IN ('candidate'))"
    )
    op.execute(
        f"UPDATE episodes e SET origin = {ORIGIN_OF_EPISODE},"
        " origin_ref = CASE WHEN e.role = 'tool' THEN"
        " left(coalesce(e.metadata->>'url', e.metadata->>'file_path', e.speaker), 512) END"
        " WHERE e.role <> 'user' OR e.source NOT IN ('capture', 'promotion')"
    )
    op.execute(
        "UPDATE notes n SET origin = e.origin, origin_ref = e.origin_ref"
        " FROM note_sources s JOIN episodes e ON e.id = s.episode_id"
        " WHERE s.note_id = n.id AND s.relation = 'extracted' AND e.origin <> 'user'"
    )
    op.execute("UPDATE notes SET origin = 'consolidation' WHERE kind = 'knowledge'")
    op.execute(f"UPDATE notes SET trust = {TRUST_OF_ORIGIN} WHERE origin <> 'user'")
    op.execute("CREATE INDEX ix_notes_candidates ON notes (tenant_id, user_id) WHERE review IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX ix_notes_candidates")
    op.execute(
        "ALTER TABLE notes DROP COLUMN origin, DROP COLUMN origin_ref, DROP COLUMN trust,"
        " DROP COLUMN instruction_like, DROP COLUMN review"
    )
    op.execute("ALTER TABLE episodes DROP COLUMN origin, DROP COLUMN origin_ref")
