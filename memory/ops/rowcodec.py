"""Table rows to JSON-safe dicts and back, column by column, for export and import.

Invariants: `decode_row(table, encode_row(table, row))` gives back values the database
stores identically (uuids, timezone-aware datetimes, float32 vectors exactly, sparse
vectors as pgvector's text form, tsvector text); rows are keyed by column name (e.g.
`metadata`, not the ORM's `metadata_`); unknown keys are rejected so a file from another
schema fails loudly, not silently.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pgvector import SparseVector
from pgvector.sqlalchemy import SPARSEVEC, Vector
from sqlalchemy import ARRAY, DateTime, Table
from sqlalchemy.dialects.postgresql import UUID

from memory.errors import InvalidInputError


def _kind(column_type: Any) -> str:
    if isinstance(column_type, UUID):
        return "uuid"
    if isinstance(column_type, DateTime):
        return "datetime"
    if isinstance(column_type, Vector):
        return "vector"
    if isinstance(column_type, SPARSEVEC):
        return "sparsevec"
    if isinstance(column_type, ARRAY) and isinstance(column_type.item_type, DateTime):
        return "datetimes"
    return "plain"


def _float32_text(value: float) -> float:
    # Nine significant digits round-trip any float32 exactly, at a third of repr's length.
    return float(f"{float(value):.9g}")


def _encode(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "uuid":
        return str(value)
    if kind == "datetime":
        return value.isoformat()
    if kind == "datetimes":
        return [v.isoformat() for v in value]
    if kind == "vector":
        return [_float32_text(v) for v in value]
    if kind == "sparsevec":
        return value.to_text()  # "{index:value,...}/dimension", indices from 1
    if isinstance(value, list | tuple):
        return list(value)
    return value


def _decode(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "uuid":
        return uuid.UUID(str(value))
    if kind == "datetime":
        return _aware(datetime.fromisoformat(value))
    if kind == "datetimes":
        return [_aware(datetime.fromisoformat(v)) for v in value]
    if kind == "vector":
        return [float(v) for v in value]
    if kind == "sparsevec":
        return SparseVector.from_text(value)
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError(f"timestamp {value.isoformat()} has no timezone")
    return value


def encode_row(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-safe dict of every column of `row`."""
    return {c.name: _encode(_kind(c.type), row[c.name]) for c in table.columns}


def decode_row(table: Table, data: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """Column values for an insert; InvalidInputError naming `where` on a bad value."""
    columns = {c.name: c for c in table.columns}
    unknown = sorted(set(data) - set(columns))
    if unknown:
        raise InvalidInputError(f"{where}: unknown {table.name} columns {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for name, value in data.items():
        try:
            out[name] = _decode(_kind(columns[name].type), value)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{where}: bad {table.name}.{name}: {exc}") from exc
    return out
