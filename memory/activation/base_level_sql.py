"""ACT-R's base level, computed by PostgreSQL beside the note's row.

Invariant: `base_level_column` mirrors `model.base_level` term for term (hours since each
stored access with a 1 s floor, Σ t^(-d), Petrov's tail for accesses counted but no
longer stored, -Infinity with none stored); the integration tests hold the two equal.

Why in SQL: the read path scores 150 candidates, each with up to 50 stored accesses.
Reading those arrays made psycopg build up to 7,500 datetimes per search and Python sum
their powers one by one; PostgreSQL now returns B, one number per note.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, bindparam, case, cast, func, literal, select
from sqlalchemy.sql.elements import ColumnElement

from memory.activation.model import MIN_AGE_HOURS
from memory.types import Timestamp

NOW_PARAM = "activation_now"
DECAY_PARAM = "activation_decay"


def base_level_params(now: datetime, decay: float) -> dict[str, Any]:
    """The bind values `base_level_column` reads: the clock and ACT-R's decay d."""
    if not 0.0 < decay < 1.0:
        raise ValueError(f"decay must be in (0, 1), got {decay}")
    return {NOW_PARAM: now, DECAY_PARAM: decay}


def _hours_since(at: Any) -> ColumnElement[float]:
    now = bindparam(NOW_PARAM, type_=Timestamp)
    seconds = cast(func.extract("epoch", now - at), Float)
    return func.greatest(seconds / 3600.0, literal(MIN_AGE_HOURS, Float))


def base_level_column(note: Any) -> ColumnElement[float]:
    """B = ln(Σ_j t_j^(-d) + tail) of `note` (an entity or alias with access_times,
    access_count and first_access_at), as a scalar subquery correlated to it.

    Each access's age is computed once, in a derived table the aggregates read: written
    inside each of them, the read path's candidates statement ran past the 4,096
    characters psycopg caches its parsing for, and was parsed again on every search
    (commit 053aade)."""
    decay = bindparam(DECAY_PARAM, type_=Float)
    access = func.unnest(note.access_times).column_valued("access")
    ages = select(_hours_since(access).label("age")).subquery("ages")
    age = ages.c.age
    stored = func.count()
    oldest = func.max(age)
    # model._petrov_tail: a first access "younger" than the stored history counts as t_k.
    first = func.greatest(_hours_since(note.first_access_at), oldest)
    missing = note.access_count - stored
    one_minus = 1.0 - decay
    tail = case(
        (missing <= 0, literal(0.0, Float)),
        (first - oldest < 1e-9, missing * func.power(oldest, -decay)),
        else_=missing
        * (func.power(first, one_minus) - func.power(oldest, one_minus))
        / (one_minus * (first - oldest)),
    )
    level = case(
        (stored == 0, literal(float("-inf"), Float)),
        else_=func.ln(func.sum(func.power(age, -decay)) + tail),
    )
    return select(level).select_from(ages).scalar_subquery()
