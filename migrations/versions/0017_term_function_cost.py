"""the planner weighs the term-index function at its cost: long windows use their index

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07

`note_user_lexemes` (migration 0005) had PL/pgSQL's default COST of 100, so for a user
partition of a few thousand notes the planner preferred to scan the partition and call
it on every row rather than use the GIN index built on it. That is cheap for short texts
(LoCoMo's windows average 68 terms) and not for long ones: in a user-assistant history of
long replies (windows of 519 terms on average, benchmarks/longmemeval.py) the window BM25
route's statement took 111 ms scanning 1,952 rows for 70 matches, and 6-10 ms through
the index once the function is weighed at COST 1000.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SIGNATURE = "note_user_lexemes(varchar, varchar, tsvector)"


def upgrade() -> None:
    op.execute(f"ALTER FUNCTION {SIGNATURE} COST 1000")


def downgrade() -> None:
    op.execute(f"ALTER FUNCTION {SIGNATURE} COST 100")
