"""The candidates' statement (`memory.retrieval.rows`) stays within the length psycopg
caches its parsing for, in every shape a search with up to three filters takes: longer,
psycopg parsed its 4,700 characters again on every search (commit 053aade)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS

from memory.access.policy import Viewer
from memory.retrieval.rows import _candidates_statement
from memory.retrieval.scope import ReadScope, SearchFilters

NOW = datetime(2026, 12, 4, tzinfo=UTC)
VIEWERS = (
    Viewer("t", "u", None),
    Viewer("t", "u", "main"),
    Viewer("t", "u", "main", frozenset({"work", "health"})),
)


def _filters() -> list[SearchFilters]:
    options = [("kinds", ("decision",)), ("domains", ("work",)), ("since", NOW), ("until", NOW)]
    out = [SearchFilters(include_archived=archived) for archived in (False, True)]
    for count in (1, 2, 3):
        for chosen in itertools.combinations(options, count):
            out.append(SearchFilters(**dict(chosen)))
    return out


def test_every_common_shape_fits_psycopgs_parse_cache() -> None:
    for viewer in VIEWERS:
        for filters in _filters():
            scope = ReadScope(viewer, filters)
            statement = _candidates_statement(scope.shape)
            assert len(statement.sql) <= MAX_CACHED_STATEMENT_LENGTH, (viewer, filters)
            # The values `load_candidates` sends: the statement's constants, the scope's,
            # the ids, the seeds, the clock, the decay and the sparse query.
            sent = {**statement.constants, **scope.params}
            assert len(sent) + 5 <= MAX_CACHED_STATEMENT_PARAMS
