"""btree indexes on note_vectors' filter columns: a small slice is read, not searched for

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

With kind, domain and occurred_at in the mirror (0006) a filtered search still had only
the graph or a scan of the user's whole partition to reach its slice. For "since 30 days
ago" at a 100k-note user (4 % of its notes), the graph's iterative scan had to pass
over the entries of other months until its pool was full: the dense route took 38 ms on
average. With a btree per
filter column, keyed after the partition's tenant and user, the planner reads a small
slice through its index and ranks it exactly (3 ms); for a large slice it keeps the
graph. Each index is declared on the parent, so every partition gets its own; a vector
write costs three more btree entries.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = {
    "ix_note_vectors_scope_kind": "kind",
    "ix_note_vectors_scope_domain": "domain",
    "ix_note_vectors_scope_occurred": "occurred_at",
}


def upgrade() -> None:
    for name, column in INDEXES.items():
        op.create_index(name, "note_vectors", ["tenant_id", "user_id", column])
    op.execute("ANALYZE note_vectors")


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name="note_vectors")
