"""timestamps every client can read: values outside Python's datetime range brought in

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07

PostgreSQL stores timestamps far beyond year 9999; Python's datetime (and so psycopg, the
API, the workers and `muma export`) cannot read them. Before the API refused such dates,
a capture with `"occurred_at": "9999-12-31T23:59:59-14:00"` was stored as year 10000:
every statement that read the row failed, its episode stayed queued, and tenant-wide
reads (`GET /v1/users`, exports) failed with it. Each such value of any timestamp column
is clamped to the nearest day Python reads in any time zone (0001-01-02, 9999-12-30).
Not reversed on downgrade: the old values were unreadable.
"""

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOWEST, HIGHEST = "'0001-01-02 00:00:00+00'::timestamptz", "'9999-12-30 00:00:00+00'::timestamptz"
COLUMNS = """
SELECT c.relname, array_agg(a.attname::text ORDER BY a.attnum)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND a.atttypid = 'timestamptz'::regtype
GROUP BY c.relname
ORDER BY c.relname
"""


def upgrade() -> None:
    bind = op.get_bind()
    for table, columns in bind.execute(text(COLUMNS)).all():
        outside = " OR ".join(f'"{c}" < {LOWEST} OR "{c}" > {HIGHEST}' for c in columns)
        clamped = ", ".join(
            f'"{c}" = CASE WHEN "{c}" < {LOWEST} THEN {LOWEST}'
            f' WHEN "{c}" > {HIGHEST} THEN {HIGHEST} ELSE "{c}" END'
            for c in columns
        )
        # One scan per table; rows inside the range are not touched (no triggers fire),
        # and a NULL stays NULL.
        op.execute(f'UPDATE "{table}" SET {clamped} WHERE {outside}')


def downgrade() -> None:
    pass
