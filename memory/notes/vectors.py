"""Vectors read in pgvector's binary form, so a bulk read does not parse text.

A `vector` column selected as text costs ~0.1 ms of Python per 384-float vector to parse
(300 vectors: 33.5 ms of CPU, against 4.3 ms through `vector_send`; benchmarks/README.md).

Invariant: `parse_vector(vector_send(v))` equals `v` as float32 (the binary form is the
dimension, an unused int16, then big-endian float32 values); NULL stays None.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import func
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
