"""notes carry a learned sparse vector (SPLADE-tiny), scored for the read path's candidates

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

The pipeline's embed stage stores each note's SPLADE-tiny vector (`memory.clients.
sparse_encoder`: weights over BERT's 30,522 WordPiece terms, about 95 non-zero for a
LoCoMo turn, 0.8 kB) beside its embedding. The read path reads the inner products of the
query's vector with its candidates' and their adjacent turns' in the statement that
already reads the candidates' rows (`memory.retrieval.rows`); nothing searches these
vectors, so there is no index, and writing one is a HOT update.

`STORAGE MAIN`: kept inline (compressed if need be) rather than moved to TOAST, which
would cost each candidate two more page reads. Notes written before this revision have
none until the backfill fills them (`muma backfill-sparse`, or the daily task); a note
without one is neutral in the channel.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE notes ADD COLUMN sparse_embedding sparsevec(30522)")
    op.execute("ALTER TABLE notes ALTER COLUMN sparse_embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE notes DROP COLUMN sparse_embedding")
