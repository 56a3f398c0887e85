"""note_vectors carry the search filters' columns: kind, domain, occurred_at

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

A filtered search (`kinds`, `domains`, `since`, `until`) ran the dense route's iterative
HNSW scan with the filter on `notes`: every graph entry the scan produced was joined to
its notes row (a primary-key look-up and a wide heap row) before the filter could reject
it. With the filter columns in the mirror, the scan rejects an entry from the narrow row
it already reads, and only the notes that pass are joined for the access rules (for a
100k-note user and a domain far from the query, EXPLAIN ANALYZE at this revision: 20,303
entries rejected in the mirror, 71 ms).

The trigger of 0004 now also copies kind, domain and occurred_at, and fires when they
change. Upgrading drops the partitions' graphs, fills the new columns in one UPDATE and
builds the graphs again (minutes for millions of notes): updating the rows under live
graphs would insert a second graph entry per row.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCHABLE = (
    "{row}.embedding IS NOT NULL AND {row}.status IN ('active', 'archived')"
    " AND {row}.valid_to IS NULL"
)
COPIED = ("embedding", "status", "valid_to", "kind", "domain", "occurred_at")
UPDATE_TRIGGER = (
    f"AFTER UPDATE OF {', '.join(COPIED)}, tenant_id, user_id, id ON notes"
    " FOR EACH ROW WHEN ("
    + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in COPIED)
    + " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
)
OLD_UPDATE_TRIGGER = (
    "AFTER UPDATE OF embedding, status, valid_to, tenant_id, user_id, id ON notes"
    " FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding"
    " OR OLD.status IS DISTINCT FROM NEW.status OR OLD.valid_to IS DISTINCT FROM NEW.valid_to"
    " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
)


def _sync_body(columns: tuple[str, ...]) -> str:
    """The 0004 trigger body, copying `columns` of notes beside the vector."""
    names = ", ".join(("tenant_id", "user_id", "note_id", "active", "embedding", *columns))
    values = ", ".join(
        ("NEW.tenant_id", "NEW.user_id", "NEW.id", "NEW.status = 'active'", "NEW.embedding")
        + tuple(f"NEW.{c}" for c in columns)
    )
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in ("embedding", "active", *columns))
    return f"""
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE note_vectors;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (NOT ({SEARCHABLE.format(row="NEW")})
            OR (OLD.tenant_id, OLD.user_id, OLD.id) <> (NEW.tenant_id, NEW.user_id, NEW.id))) THEN
        DELETE FROM note_vectors
        WHERE tenant_id = OLD.tenant_id AND user_id = OLD.user_id AND note_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND {SEARCHABLE.format(row="NEW")} THEN
        INSERT INTO note_vectors ({names})
        VALUES ({values})
        ON CONFLICT (tenant_id, user_id, note_id)
        DO UPDATE SET {updates};
    END IF;
    RETURN NULL;
END
"""


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_note_vectors_embedding_hnsw")
    op.execute(
        "ALTER TABLE note_vectors ADD COLUMN kind varchar(16),"
        " ADD COLUMN domain varchar(64), ADD COLUMN occurred_at timestamptz"
    )
    op.execute(
        "UPDATE note_vectors v SET kind = n.kind, domain = n.domain, occurred_at = n.occurred_at"
        " FROM notes n WHERE n.tenant_id = v.tenant_id AND n.user_id = v.user_id"
        " AND n.id = v.note_id"
    )
    for column in ("kind", "domain", "occurred_at"):
        op.execute(f"ALTER TABLE note_vectors ALTER COLUMN {column} SET NOT NULL")
    _replace_sync(("kind", "domain", "occurred_at"), UPDATE_TRIGGER)
    _create_graphs()
    op.execute("ANALYZE note_vectors")


def downgrade() -> None:
    _replace_sync((), OLD_UPDATE_TRIGGER)
    op.execute(
        "ALTER TABLE note_vectors DROP COLUMN kind, DROP COLUMN domain, DROP COLUMN occurred_at"
    )


def _replace_sync(columns: tuple[str, ...], update_trigger: str) -> None:
    # CREATE OR REPLACE keeps the function's owner, SECURITY DEFINER, search_path and
    # grants from 0004; only the body changes.
    schema = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    quoted = '"' + str(schema).replace('"', '""') + '"'
    op.execute(
        "CREATE OR REPLACE FUNCTION note_vectors_sync() RETURNS trigger LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = {quoted}, pg_temp"
        f" AS $fn${_sync_body(columns)}$fn$"
    )
    op.execute("DROP TRIGGER IF EXISTS notes_vectors_update ON notes")
    op.execute(
        f"CREATE TRIGGER notes_vectors_update {update_trigger}"
        " EXECUTE FUNCTION note_vectors_sync()"
    )


def _create_graphs() -> None:
    # Declared on the parent: PostgreSQL builds one graph per partition.
    op.create_index(
        "ix_note_vectors_embedding_hnsw",
        "note_vectors",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
