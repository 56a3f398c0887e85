"""pgvector's binary form parses to the stored vector (memory/notes/vectors.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pgvector.sqlalchemy import Vector
from sqlalchemy import cast, literal, select

from memory.db import session_scope
from memory.notes.vectors import binary_vector, parse_vector

pytestmark = pytest.mark.integration


def test_binary_vectors_round_trip(database_url: str) -> None:
    values = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    text = "[" + ",".join(repr(float(v)) for v in values) + "]"
    with session_scope() as session:
        raw, null = session.execute(
            select(
                binary_vector(cast(literal(text), Vector(384)), "v"),
                binary_vector(cast(literal(None), Vector(384)), "n"),
            )
        ).one()
    parsed = parse_vector(raw)
    assert parsed is not None and parsed.dtype == np.float32
    np.testing.assert_array_equal(parsed, values)
    assert parse_vector(null) is None
