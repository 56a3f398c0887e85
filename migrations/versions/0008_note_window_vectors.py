"""window vectors in a narrow table of their own, hash-partitioned by user

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

The read path's dense_window route scores every candidate the other routes found (about
230 per search) by the cosine of its window vector. Those vectors lived only in
`notes.window_embedding`, TOASTed out of the wide notes rows: per candidate a primary-key
look-up, the heap row, then the TOAST index and two TOAST pages. For 230 random notes of
a 100k-note user that read took 4.0 ms with every page cached and 16.1 ms on a cold
cache, against 2.4 and 5.6 ms for the same ids in a narrow inline table (this
revision's measurement on the latency benchmark's data).

- `note_window_vectors (tenant_id, user_id, note_id, window_embedding)`, hash-partitioned
  on (tenant_id, user_id) like note_vectors (0004), so a read naming the viewer's tenant
  and user is pruned to one partition; the vector is stored inline (STORAGE PLAIN).
- A mirror of the window vectors of the searchable notes (active or archived, current:
  the only notes the read path scores), kept by a trigger on notes, SECURITY DEFINER as
  in 0004 so that changes made as `muma_app` keep it current while `muma_app` may only
  read its own rows. The trigger fires for inserts of searchable notes with a window
  vector, updates of the window vector, status, validity or identity, deletes and
  truncates; the pipeline's other updates cost nothing.
- `notes.window_embedding` stays the source the write path reads and writes.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PARTITIONS = 64
APP_ROLE = "muma_app"
POLICY = "muma_app_scope"
SCOPE = (
    "tenant_id = NULLIF(current_setting('muma.tenant_id', true), '')"
    " AND user_id = NULLIF(current_setting('muma.user_id', true), '')"
)
SEARCHABLE = (
    "{row}.window_embedding IS NOT NULL AND {row}.status IN ('active', 'archived')"
    " AND {row}.valid_to IS NULL"
)
COPIED = ("window_embedding", "status", "valid_to")
TRIGGERS = {
    "notes_window_vectors_insert": (
        f"AFTER INSERT ON notes FOR EACH ROW WHEN ({SEARCHABLE.format(row='NEW')})"
    ),
    # `UPDATE OF` skips statements that do not set these columns; WHEN skips rows where
    # they were set to what they already were.
    "notes_window_vectors_update": (
        f"AFTER UPDATE OF {', '.join(COPIED)}, tenant_id, user_id, id ON notes"
        " FOR EACH ROW WHEN ("
        + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in COPIED)
        + " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
    ),
    "notes_window_vectors_delete": (
        "AFTER DELETE ON notes FOR EACH ROW WHEN (OLD.window_embedding IS NOT NULL)"
    ),
    "notes_window_vectors_truncate": "AFTER TRUNCATE ON notes FOR EACH STATEMENT",
}
# Every statement names the full primary key, so it touches one partition by index.
SYNC_BODY = f"""
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE note_window_vectors;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NOT ({SEARCHABLE.format(row="NEW")})
            OR (OLD.tenant_id, OLD.user_id, OLD.id) <> (NEW.tenant_id, NEW.user_id, NEW.id))) THEN
        DELETE FROM note_window_vectors
        WHERE tenant_id = OLD.tenant_id AND user_id = OLD.user_id AND note_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND {SEARCHABLE.format(row="NEW")} THEN
        INSERT INTO note_window_vectors (tenant_id, user_id, note_id, window_embedding)
        VALUES (NEW.tenant_id, NEW.user_id, NEW.id, NEW.window_embedding)
        ON CONFLICT (tenant_id, user_id, note_id)
        DO UPDATE SET window_embedding = EXCLUDED.window_embedding;
    END IF;
    RETURN NULL;
END
"""


def upgrade() -> None:
    op.execute(
        "CREATE TABLE note_window_vectors (tenant_id varchar(128) NOT NULL,"
        " user_id varchar(128) NOT NULL, note_id uuid NOT NULL,"
        " window_embedding vector(384) NOT NULL,"
        " CONSTRAINT pk_note_window_vectors PRIMARY KEY (tenant_id, user_id, note_id))"
        " PARTITION BY HASH (tenant_id, user_id)"
    )
    for i in range(PARTITIONS):
        op.execute(
            f"CREATE TABLE note_window_vectors_p{i:02d} PARTITION OF note_window_vectors"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
        )
    # After the partitions exist: ALTER on the parent recurses to every partition.
    op.execute("ALTER TABLE note_window_vectors ALTER COLUMN window_embedding SET STORAGE PLAIN")
    op.execute(
        "INSERT INTO note_window_vectors (tenant_id, user_id, note_id, window_embedding)"
        " SELECT tenant_id, user_id, id, window_embedding FROM notes"
        f" WHERE {SEARCHABLE.format(row='notes')}"
    )
    op.execute(
        "CREATE FUNCTION note_window_vectors_sync() RETURNS trigger LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = {_schema()}, pg_temp AS $fn${SYNC_BODY}$fn$"
    )
    # Triggers run their function whatever EXECUTE says; nobody needs to call it directly.
    op.execute("REVOKE EXECUTE ON FUNCTION note_window_vectors_sync() FROM PUBLIC")
    for name, spec in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {spec} EXECUTE FUNCTION note_window_vectors_sync()")
    # muma_app reads its own rows through the parent only and writes none (the trigger
    # writes with the owner's rights).
    op.execute(f"GRANT SELECT ON note_window_vectors TO {APP_ROLE}")
    op.execute("ALTER TABLE note_window_vectors ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY {POLICY} ON note_window_vectors AS PERMISSIVE FOR ALL TO {APP_ROLE}"
        f" USING ({SCOPE}) WITH CHECK ({SCOPE})"
    )
    op.execute("ANALYZE note_window_vectors")


def downgrade() -> None:
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON notes")
    op.execute("DROP FUNCTION IF EXISTS note_window_vectors_sync()")
    # Drops the partitions and the policy with it.
    op.execute("DROP TABLE IF EXISTS note_window_vectors")


def _schema() -> str:
    """The schema the tables live in (quoted), normally `public`."""
    name = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    return '"' + str(name).replace('"', '""') + '"'
