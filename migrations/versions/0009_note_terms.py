"""the lexical routes' columns in a narrow table of their own, hash-partitioned by user

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

The BM25 routes score up to 2,000 candidate notes per query from their term vectors, and
checked the access rules on the same rows: per candidate a heap row of notes, ~2.5 kB
wide (the write path's texts, both term vectors and ~30 other columns; 2.5 GB for a
million notes, 3 rows a page). On the latency benchmark's data the first run of a
question's BM25 took 2-3 times its second (27.8 against 9.8 ms for the slowest; first
runs p95 26.0 ms, repeats p90 9.4), most likely those pages read from outside
PostgreSQL's buffers. A narrow copy of the terms alone (646 MB for the same notes) halved
the cold p95 of both routes in a prototype (own 26.0 -> 14.8 ms, window 23.0 -> 13.7).

- `note_terms`: for each searchable note (active or archived, current) its tenant, user,
  id, the columns the access rules and search filters read (agent, visibility, domain,
  kind, status, occurred_at, expires_at, valid_to) and the BM25 inputs (both term vectors
  and their lengths). Hash-partitioned on (tenant_id, user_id) like note_vectors, so a
  read naming the viewer is pruned to one partition, with the per-user term indexes of
  0005 on it.
- Kept by a trigger on notes (SECURITY DEFINER, as in 0004 and 0008) for inserts of
  searchable notes, updates of a mirrored column or of the identity, deletes and
  truncates; the pipeline's other updates (access history, links) cost nothing.
- `notes` keeps its columns and its index of own terms (the commons' expertise query
  reads it); its index of window terms, which only the window route read, is dropped, so
  a note's window terms are indexed once, in the mirror.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PARTITIONS = 64
APP_ROLE = "muma_app"
POLICY = "muma_app_scope"
SCOPE = (
    "tenant_id = NULLIF(current_setting('muma.tenant_id', true), '')"
    " AND user_id = NULLIF(current_setting('muma.user_id', true), '')"
)
SEARCHABLE = "{row}.status IN ('active', 'archived') AND {row}.valid_to IS NULL"
COPIED = (
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
COLUMNS = ("tenant_id", "user_id", "note_id", *COPIED)
VALUES = ("tenant_id", "user_id", "id", *COPIED)
TRIGGERS = {
    "notes_terms_insert": (
        f"AFTER INSERT ON notes FOR EACH ROW WHEN ({SEARCHABLE.format(row='NEW')})"
    ),
    # `UPDATE OF` skips statements that do not set these columns; WHEN skips rows where
    # they were set to what they already were.
    "notes_terms_update": (
        f"AFTER UPDATE OF {', '.join(COPIED)}, tenant_id, user_id, id ON notes"
        " FOR EACH ROW WHEN ("
        + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in COPIED)
        + " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
    ),
    "notes_terms_delete": (
        f"AFTER DELETE ON notes FOR EACH ROW WHEN ({SEARCHABLE.format(row='OLD')})"
    ),
    "notes_terms_truncate": "AFTER TRUNCATE ON notes FOR EACH STATEMENT",
}
# Every statement names the full primary key, so it touches one partition by index.
SYNC_BODY = f"""
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE note_terms;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NOT ({SEARCHABLE.format(row="NEW")})
            OR (OLD.tenant_id, OLD.user_id, OLD.id) <> (NEW.tenant_id, NEW.user_id, NEW.id))) THEN
        DELETE FROM note_terms
        WHERE tenant_id = OLD.tenant_id AND user_id = OLD.user_id AND note_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND {SEARCHABLE.format(row="NEW")} THEN
        INSERT INTO note_terms ({", ".join(COLUMNS)})
        VALUES ({", ".join(f"NEW.{c}" for c in VALUES)})
        ON CONFLICT (tenant_id, user_id, note_id)
        DO UPDATE SET {", ".join(f"{c} = EXCLUDED.{c}" for c in COPIED)};
    END IF;
    RETURN NULL;
END
"""
INDEXES = {
    "ix_note_terms_user_index_terms": "index_terms",
    "ix_note_terms_user_window_terms": "window_terms",
}


def upgrade() -> None:
    op.execute(
        "CREATE TABLE note_terms (tenant_id varchar(128) NOT NULL,"
        " user_id varchar(128) NOT NULL, note_id uuid NOT NULL,"
        " agent_id varchar(128) NOT NULL, visibility varchar(16) NOT NULL,"
        " domain varchar(64) NOT NULL, kind varchar(16) NOT NULL, status varchar(16) NOT NULL,"
        " occurred_at timestamptz NOT NULL, expires_at timestamptz, valid_to timestamptz,"
        " index_terms tsvector, term_count integer NOT NULL,"
        " window_terms tsvector, window_term_count integer NOT NULL,"
        " CONSTRAINT pk_note_terms PRIMARY KEY (tenant_id, user_id, note_id))"
        " PARTITION BY HASH (tenant_id, user_id)"
    )
    for i in range(PARTITIONS):
        op.execute(
            f"CREATE TABLE note_terms_p{i:02d} PARTITION OF note_terms"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
        )
    op.execute(
        f"INSERT INTO note_terms ({', '.join(COLUMNS)})"
        f" SELECT {', '.join(VALUES)} FROM notes WHERE {SEARCHABLE.format(row='notes')}"
    )
    for name, column in INDEXES.items():
        op.execute(
            f"CREATE INDEX {name} ON note_terms"
            f" USING gin (note_user_lexemes(tenant_id, user_id, {column}))"
        )
    op.execute("DROP INDEX IF EXISTS ix_notes_user_window_terms")
    op.execute(
        "CREATE FUNCTION note_terms_sync() RETURNS trigger LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = {_schema()}, pg_temp AS $fn${SYNC_BODY}$fn$"
    )
    # Triggers run their function whatever EXECUTE says; nobody needs to call it directly.
    op.execute("REVOKE EXECUTE ON FUNCTION note_terms_sync() FROM PUBLIC")
    for name, spec in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {spec} EXECUTE FUNCTION note_terms_sync()")
    # muma_app reads its own rows through the parent only and writes none (the trigger
    # writes with the owner's rights).
    op.execute(f"GRANT SELECT ON note_terms TO {APP_ROLE}")
    op.execute("ALTER TABLE note_terms ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY {POLICY} ON note_terms AS PERMISSIVE FOR ALL TO {APP_ROLE}"
        f" USING ({SCOPE}) WITH CHECK ({SCOPE})"
    )
    op.execute("ANALYZE note_terms")


def downgrade() -> None:
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON notes")
    op.execute("DROP FUNCTION IF EXISTS note_terms_sync()")
    # Drops the partitions, their indexes and the policy with it.
    op.execute("DROP TABLE IF EXISTS note_terms")
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_notes_user_window_terms ON notes"
        " USING gin (note_user_lexemes(tenant_id, user_id, window_terms))"
    )


def _schema() -> str:
    """The schema the tables live in (quoted), normally `public`."""
    name = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    return '"' + str(name).replace('"', '""') + '"'
