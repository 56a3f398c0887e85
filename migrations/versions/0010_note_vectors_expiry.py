"""note_vectors carry expires_at: the graph scan passes over notes past their TTL

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

The dense route asks the user's graph for its nearest `2 * limit` vectors, then joins them
to notes for the access rules, which drop every note whose TTL has passed. Until the
hourly decay sweep expires such a note (status 'expired', which takes it out of the
mirror), its vector stays in the mirror as `active` and takes a place in the pool. On the
latency benchmark's data, where the sweep never runs, 69,620 of 979,956 active notes
were past their TTL; a prompt about plans had 112 of its 200 nearest among them, and 4 in
100 prompts came up short and fell back to the one-statement search (up to 29 ms against
8-13 ms). With expires_at in the mirror the graph's iterative scan rejects those entries
from the row it already reads, like the filters of 0006.

The trigger of 0006 now also copies expires_at, and fires when it changes. Upgrading adds
the column (NULL, so no rewrite) and copies it only for the notes that have a TTL, with
the graphs in place: each such row gains a second entry in each graph that holds it
(until VACUUM removes the old one), about 4.7 ms a row. On the benchmark's million notes,
71,712 with a TTL (never swept), 338 s; a deployment whose sweep runs holds only the
notes whose TTL has not passed. (0006 rebuilt the graphs because it changed every row.)
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FILTER_COLUMNS = ("kind", "domain", "occurred_at")


def _revision_0006() -> ModuleType:
    """0006's trigger builder: its body takes the columns to copy, so this revision and
    its downgrade install the same body with or without expires_at."""
    path = Path(__file__).with_name("0006_note_vectors_filter_columns.py")
    spec = importlib.util.spec_from_file_location("muma_revision_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _update_trigger(columns: tuple[str, ...]) -> str:
    """0006's update trigger, watching `columns` beside the vector, status and validity."""
    copied = ("embedding", "status", "valid_to", *columns)
    return (
        f"AFTER UPDATE OF {', '.join(copied)}, tenant_id, user_id, id ON notes"
        " FOR EACH ROW WHEN ("
        + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in copied)
        + " OR OLD.tenant_id <> NEW.tenant_id OR OLD.user_id <> NEW.user_id OR OLD.id <> NEW.id)"
    )


def upgrade() -> None:
    columns = (*FILTER_COLUMNS, "expires_at")
    op.execute("ALTER TABLE note_vectors ADD COLUMN expires_at timestamptz")
    _revision_0006()._replace_sync(columns, _update_trigger(columns))
    op.execute(
        "UPDATE note_vectors v SET expires_at = n.expires_at FROM notes n"
        " WHERE n.expires_at IS NOT NULL AND n.tenant_id = v.tenant_id"
        " AND n.user_id = v.user_id AND n.id = v.note_id"
    )
    op.execute("ANALYZE note_vectors")


def downgrade() -> None:
    _revision_0006()._replace_sync(FILTER_COLUMNS, _update_trigger(FILTER_COLUMNS))
    op.execute("ALTER TABLE note_vectors DROP COLUMN expires_at")
