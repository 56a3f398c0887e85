"""Vectors read and written in pgvector's binary form, so the hot paths format no text.

A `vector` column selected as text costs ~0.1 ms of Python per 384-float vector to parse
(300 vectors: 33.5 ms of CPU, against 4.3 ms through `vector_send`; commit bafdaa3),
and binding one as text ~0.5 ms to format (`str` of each float), against a few
microseconds as binary (`BinaryVector`).

Invariants: `parse_vector(vector_send(v))` equals `v` as float32 (the binary form is the
dimension, an unused int16, then big-endian float32 values); NULL stays None. A value
bound through `BinaryVector` is stored as exactly its float32 values, as the text form
stores them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from pgvector import Vector as PgVector
from pgvector.sqlalchemy import Vector
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import Dialect, func
from sqlalchemy.sql.elements import ColumnElement, Label


def binary_vector(column: ColumnElement[Any], name: str) -> Label[Any]:
    """`column` as pgvector's binary send format, labelled `name`."""
    return func.vector_send(column).label(name)


def parse_vector(raw: bytes | None) -> np.ndarray | None:
    if raw is None:
        return None
    dimension = int.from_bytes(raw[:2], "big")
    return np.frombuffer(raw, dtype=">f4", count=dimension, offset=4).astype(np.float32)


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form of `vector`, as SQLAlchemy's Vector type would bind it
    (`str` of each float): computed once for a search's several statements."""
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def vector_binary(vector: Any) -> bytes:
    """pgvector's binary receive form of `vector` (a list, an array or a pgvector Vector)."""
    values = np.asarray(vector.to_numpy() if isinstance(vector, PgVector) else vector, dtype=">f4")
    if values.ndim != 1:
        raise ValueError("a vector must be one-dimensional")
    return len(values).to_bytes(2, "big") + b"\0\0" + values.tobytes()


class VectorParam:
    """A vector parameter psycopg sends in binary (see `_VectorParamDumper`)."""

    __slots__ = ("data",)

    def __init__(self, vector: Any) -> None:
        self.data = vector_binary(vector)


class _VectorParamDumper(Dumper):
    # Binary, with no type oid: PostgreSQL infers `vector` from where the parameter goes
    # (a vector column, a cast, the other operand of <=>) and reads it with vector_recv.
    format = Format.BINARY

    def dump(self, obj: VectorParam) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(VectorParam, _VectorParamDumper)


class BinaryVector(Vector):
    """pgvector's column type, bound in binary on psycopg (text elsewhere, and in literal
    SQL); read as pgvector's type reads it."""

    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.driver != "psycopg":
            return super().bind_processor(dialect)

        def process(value: Any) -> VectorParam | None:
            return None if value is None else VectorParam(value)

        return process
