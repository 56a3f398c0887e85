"""derived data follows the audience lattice: contributions recorded, old derivations marked

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05

Windows, evolved keywords, tags and context may hold another note's content only when
every reader of the note may read that note (memory.access.audience). Rows derived under
the earlier rule may not satisfy it, so:

- `notes.derived_version`: the rule a note's derived fields were last built under. Rows
  that exist when this revision runs get 1; the default for new rows becomes 2. The
  rebuild (`muma db rebuild-derived`, run by `muma db upgrade` and `muma up` after the
  migrations, and by the maintenance queue until none is left) recomputes every note at
  1 and sets it to 2. A partial index finds the rest in constant time.
- `note_contributions`: what evolution copied from one note into another, so a change of
  audience or a forget withdraws exactly what the source added.
- `window_readers` on notes and on the read path's mirrors `note_terms` (0009) and
  `note_window_vectors` (0008), copied by their triggers: who may rank by a note's
  windows (NULL: any reader of the note; memory.access.audience). Rows that exist get
  `{}` (no agent) until the rebuild gives them their readers, so a window built under
  the earlier rule ranks nothing for an agent in between; the user still reads them.

Adding columns with a constant default does not rewrite the tables; the partial index and
the triggers' new definitions read `notes` once.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "muma_app"
TENANT = "NULLIF(current_setting('muma.tenant_id', true), '')"
USER = "NULLIF(current_setting('muma.user_id', true), '')"
SCOPE = f"tenant_id = {TENANT} AND user_id = {USER}"


TERMS_SEARCHABLE = "{row}.status IN ('active', 'archived') AND {row}.valid_to IS NULL"
TERMS_COPIED = (
    "agent_id",
    "visibility",
    "domain",
    "kind",
    "status",
    "occurred_at",
    "expires_at",
    "valid_to",
    "index_terms",
    "term_count",
    "window_terms",
    "window_term_count",
)
WINDOW_SEARCHABLE = (
    "{row}.window_embedding IS NOT NULL AND {row}.status IN ('active', 'archived')"
    " AND {row}.valid_to IS NULL"
)
WINDOW_WATCHED = ("window_embedding", "status", "valid_to")
# mirror -> (trigger function, update trigger, searchable rows, columns the update trigger
# watches, columns copied from notes)
MIRRORS = {
    "note_terms": (
        "note_terms_sync",
        "notes_terms_update",
        TERMS_SEARCHABLE,
        TERMS_COPIED,
        TERMS_COPIED,
    ),
    "note_window_vectors": (
        "note_window_vectors_sync",
        "notes_window_vectors_update",
        WINDOW_SEARCHABLE,
        WINDOW_WATCHED,
        ("window_embedding",),
    ),
}


def _sync_body(table: str, searchable: str, copied: tuple[str, ...]) -> str:
    """The body of 0008's and 0009's trigger functions, copying `copied`."""
    columns = ("tenant_id", "user_id", "note_id", *copied)
    values = ("tenant_id", "user_id", "id", *copied)
    return f"""
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE {table};
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NOT ({searchable.format(row="NEW")})
            OR (OLD.tenant_id, OLD.user_id, OLD.id) <> (NEW.tenant_id, NEW.user_id, NEW.id))) THEN
        DELETE FROM {table}
        WHERE tenant_id = OLD.tenant_id AND user_id = OLD.user_id AND note_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND {searchable.format(row="NEW")} THEN
        INSERT INTO {table} ({", ".join(columns)})
        VALUES ({", ".join(f"NEW.{c}" for c in values)})
        ON CONFLICT (tenant_id, user_id, note_id)
        DO UPDATE SET {", ".join(f"{c} = EXCLUDED.{c}" for c in copied)};
    END IF;
    RETURN NULL;
END
"""


def _replace_mirrors(with_readers: bool) -> None:
    """Install the mirrors' trigger functions and update triggers, copying window_readers
    or not."""
    schema = _schema()
    extra = ("window_readers",) if with_readers else ()
    for table, (function, trigger, searchable, watched, copied) in MIRRORS.items():
        watched, copied = (*watched, *extra), (*copied, *extra)
        op.execute(
            f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql"
            f" SECURITY DEFINER SET search_path = {schema}, pg_temp"
            f" AS $fn${_sync_body(table, searchable, copied)}$fn$"
        )
        op.execute(f"DROP TRIGGER {trigger} ON notes")
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER UPDATE OF {', '.join(watched)}, tenant_id, user_id,"
            " id ON notes FOR EACH ROW WHEN ("
            + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in watched)
            + " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id"
            f" OR OLD.id <> NEW.id) EXECUTE FUNCTION {function}()"
        )


def _schema() -> str:
    """The schema the tables live in (quoted), normally `public`."""
    name = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    return '"' + str(name).replace('"', '""') + '"'


def upgrade() -> None:
    for table in ("notes", *MIRRORS):
        # Existing windows rank nothing for agents until rebuilt; new rows say who may.
        op.execute(f"ALTER TABLE {table} ADD COLUMN window_readers text[] DEFAULT '{{}}'")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN window_readers DROP DEFAULT")
    _replace_mirrors(with_readers=True)
    op.execute("ALTER TABLE notes ADD COLUMN derived_version smallint NOT NULL DEFAULT 1")
    op.execute("ALTER TABLE notes ALTER COLUMN derived_version SET DEFAULT 2")
    op.execute(
        "CREATE INDEX ix_notes_derived_stale ON notes (tenant_id, user_id, session_id)"
        " WHERE derived_version < 2"
    )
    op.execute(
        """
        CREATE TABLE note_contributions (
            target_id uuid NOT NULL,
            field varchar(8) NOT NULL,
            value text NOT NULL,
            source_id uuid NOT NULL,
            tenant_id varchar(128) NOT NULL,
            user_id varchar(128) NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT pk_note_contributions PRIMARY KEY (target_id, field, value, source_id),
            CONSTRAINT ck_note_contributions_field CHECK (field IN ('keyword', 'tag', 'context')),
            CONSTRAINT fk_note_contributions_target_id_notes FOREIGN KEY (target_id)
                REFERENCES notes (id) ON DELETE CASCADE,
            CONSTRAINT fk_note_contributions_source_id_notes FOREIGN KEY (source_id)
                REFERENCES notes (id) ON DELETE CASCADE
        )
        """
    )
    op.execute("CREATE INDEX ix_note_contributions_source ON note_contributions (source_id)")
    # The API withdraws contributions when an agent or user changes a note's audience.
    op.execute(f"GRANT SELECT, INSERT, DELETE ON note_contributions TO {APP_ROLE}")
    op.execute("ALTER TABLE note_contributions ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY muma_app_scope ON note_contributions AS PERMISSIVE FOR ALL"
        f" TO {APP_ROLE} USING ({SCOPE}) WITH CHECK ({SCOPE})"
    )


def downgrade() -> None:
    op.execute("DROP TABLE note_contributions")
    op.execute("DROP INDEX ix_notes_derived_stale")
    op.execute("ALTER TABLE notes DROP COLUMN derived_version")
    _replace_mirrors(with_readers=False)
    for table in ("notes", *MIRRORS):
        op.execute(f"ALTER TABLE {table} DROP COLUMN window_readers")
