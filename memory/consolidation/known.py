"""The knowledge notes a user already has, with the sources each consolidates.

Invariants: one read per consolidation run, without vectors (matching needs only
audiences and source sets, and a re-run must not pay for parsing embeddings); a
knowledge note is listed while it is active and current and still links to at least
one source; `source_ids` are the notes its `consolidates` links point at (current or
not), `lineages` their lineages, so a source revised by the write path still counts.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session


@dataclass(frozen=True)
class KnownNote:
    """A current knowledge note: what matching, versioning and unindexing read."""

    id: uuid.UUID
    lineage_id: uuid.UUID
    version: int
    tenant_id: str
    user_id: str
    agent_id: str
    visibility: str
    domain: str
    embedding_model: str | None
    pinned: bool
    content: str
    index_text: str | None
    window_text: str | None
    # What the BM25 statistics count for it (memory.notes.lexicon), to unindex it.
    index_terms: str | None
    window_terms: str | None
    term_count: int | None
    window_term_count: int | None
    access_times: list[datetime]
    access_count: int
    first_access_at: datetime | None
    half_life_hours: float
    source_ids: frozenset[uuid.UUID]
    lineages: frozenset[uuid.UUID]


_KNOWN = """
SELECT k.id, k.lineage_id, k.version, k.tenant_id, k.user_id, k.agent_id, k.visibility,
       k.domain, k.embedding_model, k.pinned, k.content, k.index_text, k.window_text,
       k.index_terms, k.window_terms, k.term_count, k.window_term_count,
       k.access_times, k.access_count, k.first_access_at, k.half_life_hours,
       array_agg(s.id) AS source_ids, array_agg(s.lineage_id) AS lineages
FROM notes AS k
JOIN links AS l ON l.source_id = k.id AND l.kind = 'consolidates'
JOIN notes AS s ON s.id = l.target_id
WHERE k.tenant_id = :tenant_id AND k.user_id = :user_id AND k.kind = 'knowledge'
  AND k.status = 'active' AND k.valid_to IS NULL
GROUP BY k.id
ORDER BY k.id
"""


def load_known_notes(session: Session, *, tenant_id: str, user_id: str) -> list[KnownNote]:
    """The user's current knowledge notes in id order, each with its sources."""
    rows = session.execute(text(_KNOWN), {"tenant_id": tenant_id, "user_id": user_id})
    return [
        KnownNote(
            **{name: value for name, value in row._mapping.items() if name not in _SETS},
            source_ids=frozenset(row.source_ids),
            lineages=frozenset(row.lineages),
        )
        for row in rows
    ]


_SETS = ("source_ids", "lineages")
