"""Reading export files: detect json, jsonl or markdown and check they are complete.

Invariants: a bundle is only returned for a file that names the `muma-export` format, a
version this code understands, a tenant and a user, and (jsonl, markdown) ends with the
`end` record whose counts match the rows read; anything else is one InvalidInputError
naming the file and, where known, the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.errors import InvalidInputError
from memory.ops.export import EXPORT_FORMAT, EXPORT_VERSION, MARKDOWN_FENCE, TABLES

_FENCED = re.compile(rf"^{re.escape(MARKDOWN_FENCE)}\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


@dataclass
class ExportBundle:
    header: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: len(self.tables.get(name, [])) for name in TABLES}


def read_export(path: Path) -> ExportBundle:
    """The export in `path`; InvalidInputError if unreadable or not a complete export."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}", path=str(path)) from exc
    return parse_export(text, source=str(path))


def parse_export(text: str, *, source: str = "export") -> ExportBundle:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            return _parse_jsonl(stripped, source)
        if isinstance(whole, dict) and "tables" in whole:
            return _from_json(whole, source)
        return _parse_jsonl(stripped, source)
    match = _FENCED.search(text)
    if match is None:
        raise InvalidInputError(
            f"{source} is not a MUMA export (expected json, jsonl or markdown from `muma export`)"
        )
    return _parse_jsonl(match.group(1), source)


def _check_header(header: Any, source: str) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise InvalidInputError(f"{source} is not a MUMA export (no '{EXPORT_FORMAT}' header)")
    version = header.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise InvalidInputError(
            f"{source} has export version {version!r}; this MUMA reads up to {EXPORT_VERSION}"
        )
    for key in ("tenant_id", "user_id"):
        if not isinstance(header.get(key), str) or not header[key]:
            raise InvalidInputError(f"{source}: header has no {key}")
    return header


def _add(bundle: ExportBundle, table: Any, row: Any, where: str) -> None:
    if table not in TABLES:
        raise InvalidInputError(f"{where}: unknown table {table!r}")
    if not isinstance(row, dict):
        raise InvalidInputError(f"{where}: a row must be a JSON object")
    bundle.tables.setdefault(table, []).append(row)


def _check_counts(bundle: ExportBundle, counts: Any, source: str) -> None:
    if not isinstance(counts, dict):
        raise InvalidInputError(f"{source}: the end record has no counts")
    read = bundle.counts()
    for name, expected in counts.items():
        if read.get(name, 0) != expected:
            raise InvalidInputError(
                f"{source} is incomplete: {read.get(name, 0)} {name} rows, expected {expected}"
            )


def _parse_jsonl(text: str, source: str) -> ExportBundle:
    bundle: ExportBundle | None = None
    counts: Any = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: invalid JSON ({exc.msg})") from exc
        if bundle is None:
            bundle = ExportBundle(_check_header(item, source))
        elif counts is not None:
            raise InvalidInputError(f"{where}: data after the end record")
        elif isinstance(item, dict) and item.get("end") is True:
            counts = item.get("counts")
        elif isinstance(item, dict):
            _add(bundle, item.get("table"), item.get("row"), where)
        else:
            raise InvalidInputError(f"{where}: expected a JSON object")
    if bundle is None:
        raise InvalidInputError(f"{source} is empty")
    if counts is None:
        raise InvalidInputError(f"{source} is truncated: no end record")
    _check_counts(bundle, counts, source)
    return bundle


def _from_json(whole: dict[str, Any], source: str) -> ExportBundle:
    header = _check_header(
        {k: v for k, v in whole.items() if k not in ("tables", "counts")}, source
    )
    bundle = ExportBundle(header)
    tables = whole.get("tables")
    if not isinstance(tables, dict):
        raise InvalidInputError(f"{source}: 'tables' must be an object")
    for name, rows in tables.items():
        if not isinstance(rows, list):
            raise InvalidInputError(f"{source}: tables.{name} must be a list")
        for index, row in enumerate(rows, start=1):
            _add(bundle, name, row, f"{source} {name}[{index}]")
    _check_counts(bundle, whole.get("counts"), source)
    return bundle
