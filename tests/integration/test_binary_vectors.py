"""pgvector's binary form parses to the stored vector (memory/notes/vectors.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pgvector.sqlalchemy import Vector
from sqlalchemy import bindparam, cast, column, insert, literal, select, table, text

from memory.db import session_scope
from memory.notes.vectors import BinaryVector, VectorParam, binary_vector, parse_vector

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


def test_vectors_bound_in_binary_store_the_same_floats(database_url: str) -> None:
    values = np.random.default_rng(5).standard_normal(384).astype(np.float32)
    as_binary = bindparam("b", values, type_=BinaryVector(384))
    as_text = bindparam("t", values, type_=Vector(384))
    with session_scope() as session:
        raw, distance, from_list = session.execute(
            select(
                binary_vector(cast(as_binary, Vector(384)), "v"),
                # An operand of <=> with no cast: the server infers the parameter's type.
                as_text.cosine_distance(as_binary),
                binary_vector(
                    cast(bindparam("l", values.tolist(), type_=BinaryVector(384)), Vector(384)),
                    "l",
                ),
            )
        ).one()
    np.testing.assert_array_equal(parse_vector(raw), values)
    np.testing.assert_array_equal(parse_vector(from_list), values)
    assert abs(distance) < 1e-6
    bound = BinaryVector(384).bind_processor(session.get_bind().dialect)
    assert isinstance(bound(values), VectorParam) and bound(None) is None


def test_note_vectors_written_through_the_orm_read_back_exactly(database_url: str) -> None:
    values = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    with session_scope() as session:
        session.execute(text("CREATE TEMP TABLE probe (v vector(384))"))
        session.execute(
            insert(table("probe", column("v", BinaryVector(384)))), [{"v": values}, {"v": None}]
        )
        rows = session.execute(text("SELECT vector_send(v) FROM probe")).scalars().all()
    assert parse_vector(rows[1]) is None
    np.testing.assert_array_equal(parse_vector(rows[0]), values)
