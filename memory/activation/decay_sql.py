"""The decay rules of `memory.activation.decay`, evaluated for a whole user in SQL.

One statement scores every current, unpinned note of the user: the decay activation
D = ln(Σ t_j^(-d) + Petrov tail) + d·ln(h/h0) (hours, 1 s floor, as `model.base_level`)
and the rule that fires (expire, archive, delete_age, delete_weak, or none). Only the
ids, rules and activations of the notes a rule selects leave the server; what the sweep
needs to act on them is read (and, for a real run, locked) for those notes only.

Invariants: the SQL mirrors `decay.note_fate` term for term (the integration tests hold
the two equal); time cutoffs are computed once in Python (`now - min_age_hours`,
`now - max_age_hours`) so comparisons are exact; a claim re-evaluates the rules on the
locked row, so a note used or changed since the scan is not acted on; FOR UPDATE SKIP
LOCKED locks only rows a rule still selects and skips rows another transaction holds.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

from memory.activation.model import MIN_AGE_HOURS
from memory.config import Settings

# Per note: its stored accesses' count, Σ age^(-d) and oldest age (hours, 1 s floor).
_HISTORY = """
CROSS JOIN LATERAL (
    SELECT count(*) AS k, sum(power(a.age, -CAST(:d AS float8))) AS stored,
           max(a.age) AS oldest
    FROM (
        SELECT greatest(CAST(extract(epoch FROM (CAST(:now AS timestamptz) - t)) AS float8)
                        / 3600.0, CAST(:floor AS float8)) AS age
        FROM unnest(n.access_times) AS t
    ) AS a
) AS h
CROSS JOIN LATERAL (
    SELECT greatest(CAST(extract(epoch FROM (CAST(:now AS timestamptz) - n.first_access_at))
                         AS float8) / 3600.0, CAST(:floor AS float8), h.oldest) AS first_age,
           greatest(n.access_count - h.k, 0) AS missing
) AS p
"""
# D; -Infinity when no access is stored (it fails every threshold, as in Python).
_STRENGTH = """
CROSS JOIN LATERAL (
    SELECT CASE WHEN h.k = 0 THEN CAST('-Infinity' AS float8) ELSE
        ln(h.stored + CASE WHEN p.missing = 0 THEN 0.0
            WHEN p.first_age - h.oldest < 1e-9 THEN p.missing * power(h.oldest, -CAST(:d AS float8))
            ELSE p.missing * (power(p.first_age, 1.0 - :d) - power(h.oldest, 1.0 - :d))
                 / ((1.0 - :d) * (p.first_age - h.oldest)) END)
        + :d * ln(greatest(n.half_life_hours, 1e-9) / :h0) END AS strength
) AS s
"""
_RULE = """
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN n.status = 'active' AND n.expires_at <= :now THEN 'expire'
        WHEN n.status = 'archived' AND n.expires_at <= :erase_expired_before
             THEN 'delete_expired'
        WHEN n.status = 'active' AND n.created_at <= :archive_before
             AND s.strength < :prune THEN 'archive'
        WHEN n.status = 'archived'
             AND coalesce(n.archived_at, n.created_at) <= :delete_before THEN 'delete_age'
        WHEN n.status = 'archived' AND s.strength < :hard_prune THEN 'delete_weak'
    END AS rule
) AS r
"""
_SCOPE = """
n.tenant_id = :tenant_id AND n.user_id = :user_id AND n.status IN ('active', 'archived')
AND n.valid_to IS NULL AND NOT n.pinned
"""
# The whole user: how many notes were scored, and the ones a rule selects.
_SCAN = f"""
WITH scored AS (
    SELECT n.id, s.strength, r.rule FROM notes AS n {_HISTORY} {_STRENGTH} {_RULE}
    WHERE {_SCOPE}
)
SELECT t.scanned, c.id, c.strength, c.rule
FROM (SELECT count(*) AS scanned FROM scored) AS t
LEFT JOIN scored AS c ON c.rule IS NOT NULL
ORDER BY c.id
"""
# Given notes, re-scored, with what acting on them needs.
_CLAIM = f"""
SELECT n.id, n.lineage_id, n.tenant_id, n.user_id, n.agent_id, n.visibility, n.domain,
       n.kind, n.content, n.index_text, n.window_text, n.index_terms, n.window_terms,
       n.term_count, n.window_term_count, s.strength, r.rule
FROM notes AS n {_HISTORY} {_STRENGTH} {_RULE}
WHERE n.id = ANY(:ids) AND {_SCOPE} AND r.rule IS NOT NULL
ORDER BY n.id
"""


def _params(tenant_id: str, user_id: str, now: datetime, settings: Settings) -> dict[str, Any]:
    decay, activation = settings.decay, settings.activation
    return {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "now": now,
        "d": activation.decay_parameter,
        "h0": activation.initial_half_life_hours,
        "floor": MIN_AGE_HOURS,
        "prune": decay.prune_threshold,
        "hard_prune": decay.hard_prune_threshold,
        "archive_before": now - timedelta(hours=decay.min_age_hours),
        "delete_before": now - timedelta(hours=decay.max_age_hours),
        "erase_expired_before": now - timedelta(hours=decay.expired_erase_after_hours),
    }


def scan_user(
    session: Session, *, tenant_id: str, user_id: str, now: datetime, settings: Settings
) -> tuple[int, list[Row[Any]]]:
    """(notes scored, [(id, strength, rule)] of the notes a rule selects, in id order)."""
    rows = session.execute(text(_SCAN), _params(tenant_id, user_id, now, settings)).all()
    scanned = int(rows[0].scanned) if rows else 0
    return scanned, [row for row in rows if row.id is not None]


def claim_notes(
    session: Session,
    ids: Sequence[uuid.UUID],
    *,
    tenant_id: str,
    user_id: str,
    now: datetime,
    settings: Settings,
    lock: bool,
) -> list[Row[Any]]:
    """The given notes a rule still selects, with their columns; with `lock`, claimed
    FOR UPDATE SKIP LOCKED until the transaction ends (rows held elsewhere are left out)."""
    sql = _CLAIM + ("FOR UPDATE OF n SKIP LOCKED" if lock else "")
    params = {**_params(tenant_id, user_id, now, settings), "ids": list(ids)}
    return list(session.execute(text(sql), params))
