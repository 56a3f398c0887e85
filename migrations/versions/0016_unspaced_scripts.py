"""lexical terms for every script: notes whose terms the new analyser changes are rebuilt

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06

The analyser (memory.retrieval.text) now indexes runs of scripts written without spaces
(Chinese, Japanese, Thai, Lao, Khmer, Myanmar) as character bigrams, where a whole run
was one term, and stems only ASCII words with the English stemmer. Only text holding a
character outside ASCII is analysed differently, so only notes whose own or window text
holds one are marked for the derived-data rebuild (`derived_version` 1), which stores
their new terms and moves the BM25 statistics with them (memory.notes.rederive; run by
`muma db upgrade` and `muma up` after the migrations, and hourly). Until then such a note
keeps its old terms: it is found as before, not by the new terms. Windows and who may
rank by them are left as they are: they already follow the audience rule.

Downgrade leaves the notes as they are: the older analyser's statistics are rebuilt only
by re-indexing, which the older version does not do.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOT_ASCII = "'[^[:ascii:]]'"


def upgrade() -> None:
    op.execute(
        "UPDATE notes SET derived_version = 1 WHERE derived_version > 1 AND ("
        f"content ~ {NOT_ASCII} OR coalesce(index_text, '') ~ {NOT_ASCII} "
        f"OR coalesce(window_text, '') ~ {NOT_ASCII})"
    )


def downgrade() -> None:
    pass
