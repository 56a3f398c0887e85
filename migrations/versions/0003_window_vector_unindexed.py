"""window vectors scored per candidate (no HNSW index); room on note pages for HOT updates

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

The read path scores `window_embedding` only for the candidates of its other routes
(memory/retrieval/candidates.py), which ranked better on LoCoMo than searching it through
its own HNSW graph (R@10 .804 against .797, commit bafdaa3). Without the index:
- one HNSW graph fewer to insert into on every write, archive and version close, and one
  fewer to hold in memory (1.95 GB at 1M notes);
- with `fillfactor = 80`, updates that change only unindexed columns (window refreshes,
  keyword/tag evolution, access history) can stay on their page as HOT updates and write no
  index entries at all. The fillfactor applies to pages written from now on.
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOTES_FILLFACTOR = 80


def upgrade() -> None:
    op.drop_index('ix_notes_window_embedding_hnsw', table_name='notes', if_exists=True)
    op.execute(f"ALTER TABLE notes SET (fillfactor = {NOTES_FILLFACTOR})")


def downgrade() -> None:
    op.execute("ALTER TABLE notes RESET (fillfactor)")
    op.create_index(
        'ix_notes_window_embedding_hnsw',
        'notes',
        ['window_embedding'],
        unique=False,
        postgresql_using='hnsw',
        postgresql_ops={'window_embedding': 'vector_cosine_ops'},
    )
