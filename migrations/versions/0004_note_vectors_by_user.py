"""note vectors in a narrow table hash-partitioned by user, one HNSW graph per partition

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Every nearest-neighbour query (the read path's dense route, the write path's
`similar_notes`) asks for the notes of ONE user, but `ix_notes_embedding_hnsw` was one
graph over every user's notes: at 1M notes a 100k-note user is 10% of it, so the filtered
iterative scan visited ~10x the rows it returned (tail 60-80 ms), and a small user's exact
scan read 384-d vectors TOASTed out of the wide notes rows (27 ms against 7.7 ms inline).
Storing `notes.embedding` inline instead made the notes heap 2.5x larger and slowed the
BM25 routes, so the vectors get their own table:

- `note_vectors (tenant_id, user_id, note_id, embedding)`, hash-partitioned on
  (tenant_id, user_id): a query with equality on both is pruned to one partition, whose
  HNSW graph holds that user and the few users hashed alongside (one graph per partition:
  the index is declared on the parent);
- `embedding` has STORAGE PLAIN: a row is ~1.6 kB, kept inline, so an exact scan of a
  small user's rows reads no TOAST;
- a mirror of the vectors of the searchable notes (active or archived, current: what
  the read path and the write path's `similar_notes` may return), kept by a trigger on
  notes, with `active` for the write path's filter (active only). The nearest-neighbour
  queries then filter on note_vectors alone, so the planner can serve ORDER BY distance
  LIMIT k from the partition's graph; joined to notes for a status filter it chose a hash
  join and sorted every vector of the user, per note of a write batch (PostgreSQL CPU
  50 % of two CPUs at 50 captures/s). The write path, consolidation and exports keep
  reading and writing `notes.embedding`. The trigger fires only for inserts of searchable
  notes, updates of the vector, status, validity or identity, deletes and truncates, so
  the frequent updates of other columns (access history, windows, tags) cost nothing. It
  is SECURITY DEFINER (owner's rights, fixed search_path) so that changes made as
  `muma_app` keep the mirror current while `muma_app` itself may only read note_vectors,
  and only its own rows (row-level security, as in 0002);
- `ix_notes_embedding_hnsw` is dropped: nothing orders notes by distance any more.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Fixed at creation (changing it means rewriting the table). 64 keeps a user's share of
# its partition's graph high: with 19 benchmark users most large users get a partition of
# their own, and with thousands of users each graph holds ~1/64 of all notes. Planning
# stays cheap: constant tenant/user equality prunes at plan time, and the write path's
# LATERAL prunes per outer row at run time. More partitions would add relations (a heap,
# a primary key and a graph each) for little gain.
PARTITIONS = 64
APP_ROLE = "muma_app"
POLICY = "muma_app_scope"
SCOPE = (
    "tenant_id = NULLIF(current_setting('muma.tenant_id', true), '')"
    " AND user_id = NULLIF(current_setting('muma.user_id', true), '')"
)
# A note has a mirror row while it is searchable.
SEARCHABLE = (
    "{row}.embedding IS NOT NULL AND {row}.status IN ('active', 'archived')"
    " AND {row}.valid_to IS NULL"
)
TRIGGERS = {
    "notes_vectors_insert": (
        f"AFTER INSERT ON notes FOR EACH ROW WHEN ({SEARCHABLE.format(row='NEW')})"
    ),
    # `UPDATE OF` skips statements that do not set these columns; WHEN skips rows where
    # they were set to what they already were.
    "notes_vectors_update": (
        "AFTER UPDATE OF embedding, status, valid_to, tenant_id, user_id, id ON notes"
        " FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding"
        " OR OLD.status IS DISTINCT FROM NEW.status OR OLD.valid_to IS DISTINCT FROM NEW.valid_to"
        " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
    ),
    "notes_vectors_delete": "AFTER DELETE ON notes FOR EACH ROW WHEN (OLD.embedding IS NOT NULL)",
    "notes_vectors_truncate": "AFTER TRUNCATE ON notes FOR EACH STATEMENT",
}
# Every statement names the full primary key, so it touches one partition by index.
SYNC_BODY = f"""
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
        INSERT INTO note_vectors (tenant_id, user_id, note_id, active, embedding)
        VALUES (NEW.tenant_id, NEW.user_id, NEW.id, NEW.status = 'active', NEW.embedding)
        ON CONFLICT (tenant_id, user_id, note_id)
        DO UPDATE SET embedding = EXCLUDED.embedding, active = EXCLUDED.active;
    END IF;
    RETURN NULL;
END
"""


def upgrade() -> None:
    schema = _schema()
    op.execute(
        "CREATE TABLE note_vectors (tenant_id varchar(128) NOT NULL,"
        " user_id varchar(128) NOT NULL, note_id uuid NOT NULL,"
        " active boolean NOT NULL, embedding vector(384) NOT NULL,"
        " CONSTRAINT pk_note_vectors PRIMARY KEY (tenant_id, user_id, note_id))"
        " PARTITION BY HASH (tenant_id, user_id)"
    )
    for i in range(PARTITIONS):
        op.execute(
            f"CREATE TABLE note_vectors_p{i:02d} PARTITION OF note_vectors"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
        )
    # After the partitions exist: ALTER on the parent recurses to every partition.
    op.execute("ALTER TABLE note_vectors ALTER COLUMN embedding SET STORAGE PLAIN")
    # Backfill before the graphs exist: one bulk build per partition, not N inserts.
    op.execute(
        "INSERT INTO note_vectors (tenant_id, user_id, note_id, active, embedding)"
        " SELECT tenant_id, user_id, id, status = 'active', embedding FROM notes"
        f" WHERE {SEARCHABLE.format(row='notes')}"
    )
    # Declared on the parent: PostgreSQL creates one graph per partition.
    op.create_index(
        "ix_note_vectors_embedding_hnsw",
        "note_vectors",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.execute(
        "CREATE FUNCTION note_vectors_sync() RETURNS trigger LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = {schema}, pg_temp AS $fn${SYNC_BODY}$fn$"
    )
    # Triggers run their function whatever EXECUTE says; nobody needs to call it directly.
    op.execute("REVOKE EXECUTE ON FUNCTION note_vectors_sync() FROM PUBLIC")
    for name, spec in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {spec} EXECUTE FUNCTION note_vectors_sync()")
    # muma_app reads its own rows through the parent only: no grant on any partition, and
    # no write grant at all (the trigger writes with the owner's rights).
    op.execute(f"GRANT SELECT ON note_vectors TO {APP_ROLE}")
    op.execute("ALTER TABLE note_vectors ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY {POLICY} ON note_vectors AS PERMISSIVE FOR ALL TO {APP_ROLE}"
        f" USING ({SCOPE}) WITH CHECK ({SCOPE})"
    )
    op.execute("ANALYZE note_vectors")
    op.drop_index("ix_notes_embedding_hnsw", table_name="notes", if_exists=True)


def downgrade() -> None:
    op.create_index(
        "ix_notes_embedding_hnsw",
        "notes",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON notes")
    op.execute("DROP FUNCTION IF EXISTS note_vectors_sync()")
    # Drops the partitions, the graphs and the policy with it.
    op.execute("DROP TABLE IF EXISTS note_vectors")


def _schema() -> str:
    """The schema the tables live in (quoted), normally `public`."""
    name = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar()
    return '"' + str(name).replace('"', '""') + '"'
