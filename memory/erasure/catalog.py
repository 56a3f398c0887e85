"""Every place a memory's content, or a user's data, can be stored: the one list that
forgetting a memory and erasing a user or tenant work from (DESIGN.md §3a).

Invariants: every table of the schema is listed here (a test walks the database catalog,
so a table added later without a row here fails it); `scope` says how a user's rows are
found; `content` says whether a row can hold text derived from a memory (then forgetting
a memory must reach it); Redis keys and synced files are listed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["user", "tenant", "note", "episode", "mirror", "system"]


@dataclass(frozen=True)
class Place:
    """A table: how a user's rows are found (`scope`), and whether it holds content."""

    table: str
    scope: Scope
    content: bool
    how_forgotten: str  # what forgetting one memory does here (for the docs and tests)


PLACES: tuple[Place, ...] = (
    Place("notes", "user", True, "every version of the memory deleted; a tombstone kept"),
    Place("note_sources", "note", False, "deleted with the note"),
    Place("note_vectors", "mirror", True, "follows notes (trigger)"),
    Place("note_window_vectors", "mirror", True, "follows notes; neighbours' rebuilt"),
    Place("note_terms", "mirror", True, "follows notes; neighbours' rebuilt"),
    Place("note_contributions", "user", True, "what it gave other notes withdrawn"),
    Place("links", "user", False, "deleted with the note"),
    Place("episodes", "user", True, "its text erased (only its sentence, if others need it)"),
    Place("lexicon", "user", True, "its terms uncounted; a term no note holds is removed"),
    Place("lexicon_totals", "user", False, "its counts removed"),
    Place("conflicts", "user", False, "deleted with the note"),
    Place("transactive_index", "user", True, "rebuilt from the remaining notes"),
    Place("events", "user", True, "the memory's events keep ids, actor and time only"),
    Place("tombstones", "user", False, "one row per erased version: no content"),
    Place("dead_letters", "episode", True, "the letters of its episodes deleted"),
    Place("journal_injections", "user", False, "the rows naming any of its versions deleted"),
    Place("erasures", "tenant", False, "not touched (a user erasure's own record)"),
    Place("agents", "tenant", False, "not touched (configuration)"),
    Place("api_tokens", "tenant", False, "not touched (a user erasure revokes its tokens)"),
    Place("alembic_version", "system", False, "not touched"),
)
PLACE_BY_TABLE = {place.table: place for place in PLACES}

# Redis: one hash per session of working memory holds items' text (memory.working); the
# read-ahead's recent users name users. The event stream is pub/sub: nothing is stored.
REDIS_USER_KEYS = (
    "muma:wm:{tenant}:{user}:*",  # working memory (components escaped as the service does)
)
REDIS_USER_MEMBERS = ("muma:read-ahead:recent",)  # sorted set members name tenant/user
# Files: `sync.dir/<user>/*.md` when filesystem sync is on (memory.sync).
SYNCED_FILES = "{sync_dir}/{user}/*.md"
# Erasing a user removes the whole directory (note files, conflict copies, the state file
# naming tenant and user, temporary files): only one whose state file names the tenant,
# since directories are per user id, not per tenant.
SYNCED_DIRECTORY = "{sync_dir}/{user}"
