"""Import a `muma export` file (json, jsonl or markdown) into this database.

Invariants:
- Ids, versions, lineages, validity intervals, access history, pins, visibility,
  embeddings and provenance are inserted as exported; only `tenant_id` may be rewritten
  (`--tenant`). Episode `seq` is reassigned by the database, in the exported order.
- Idempotent: every row is inserted with ON CONFLICT DO NOTHING (audit events, whose ids
  are local, are matched on tenant, user, actor, action, entity and time), so a second
  import of the same file inserts nothing and changes nothing.
- Rows that already exist for another tenant or user are refused up front: ids are kept,
  so such an import could never be faithful.
- The BM25 lexicon is rebuilt for the imported notes that are active and current
  (index_note_terms); rows that already existed are not counted twice.
- Imported notes are marked for the derived-data rebuild (`derived_version` 1, no agent
  may rank by their windows until it ran): windows and evolved words are recomputed
  from the notes of this database, never trusted from a file.
- One call is one transaction (the caller's): a failed import leaves nothing behind.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Table, bindparam, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from memory.commons.service import refresh_transactive_index
from memory.episodes.models import Episode
from memory.errors import ConflictError, InvalidInputError
from memory.notes.lexicon import index_note_terms
from memory.notes.models import Note
from memory.ops.audit import record_event
from memory.ops.export import TABLES
from memory.ops.export_files import ExportBundle
from memory.ops.rowcodec import decode_row
from memory.trust.origin import least_trusted
from memory.trust.settings import DEFAULT_TRUST

BATCH = 200
ID_CHUNK = 5000
Progress = Callable[[str, int], None]
EVENT_COLUMNS = (
    "tenant_id", "user_id", "actor", "action", "entity_type", "entity_id", "reason", "created_at",
)  # fmt: skip

# Each parameter appears once (typed by its CAST), so PostgreSQL never deduces two types.
_EVENT_INSERT = text(
    "WITH v (tenant_id, user_id, actor, action, entity_type, entity_id, reason, data, "
    "created_at) AS (VALUES (CAST(:tenant_id AS varchar), CAST(:user_id AS varchar), "
    "CAST(:actor AS varchar), CAST(:action AS varchar), CAST(:entity_type AS varchar), "
    "CAST(:entity_id AS varchar), CAST(:reason AS text), CAST(:data AS jsonb), "
    "CAST(:created_at AS timestamptz))) "
    "INSERT INTO events (tenant_id, user_id, actor, action, entity_type, entity_id, reason, "
    "data, created_at) SELECT * FROM v WHERE NOT EXISTS (SELECT 1 FROM events e "
    "WHERE e.tenant_id = v.tenant_id AND e.user_id IS NOT DISTINCT FROM v.user_id "
    "AND e.actor = v.actor AND e.action = v.action "
    "AND e.entity_id IS NOT DISTINCT FROM v.entity_id AND e.created_at = v.created_at)"
)


def _decoded(bundle: ExportBundle, tenant_id: str) -> dict[str, list[dict[str, Any]]]:
    user_id = bundle.header["user_id"]
    out: dict[str, list[dict[str, Any]]] = {}
    for name, rows in bundle.tables.items():
        decoded = []
        for index, raw in enumerate(rows, start=1):
            row = decode_row(TABLES[name], raw, where=f"{name} row {index}")
            if "user_id" in row and row["user_id"] not in (user_id, None):
                raise InvalidInputError(f"{name} row {index} belongs to another user")
            if "tenant_id" in row:
                row["tenant_id"] = tenant_id
            decoded.append(row)
        out[name] = decoded
    return out


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _refuse_foreign(
    session: Session, model: Any, ids: list[uuid.UUID], tenant: str, user: str
) -> None:
    for chunk in _chunks(ids, ID_CHUNK):
        clash = session.scalar(
            select(model.id)
            .where(model.id.in_(chunk), or_(model.tenant_id != tenant, model.user_id != user))
            .limit(1)
        )
        if clash is not None:
            raise ConflictError(
                f"{model.__tablename__} row {clash} already exists for another tenant or user; "
                "an import keeps ids, so import into another database",
                id=str(clash),
            )


def _existing(session: Session, column: Any, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    found: set[uuid.UUID] = set()
    for chunk in _chunks(sorted(set(ids)), ID_CHUNK):
        found.update(session.scalars(select(column).where(column.in_(chunk))))
    return found


def _insert(
    session: Session, table: Table, rows: list[dict[str, Any]], progress: Progress | None
) -> int:
    """Insert rows, skipping any that conflict; return how many were new."""
    inserted = 0
    for chunk in _chunks(rows, BATCH):
        statement = insert(table).values(chunk).on_conflict_do_nothing()
        # Counted from RETURNING: a multi-row INSERT's rowcount may be -1 (unknown), which
        # showed a re-import as "-1 new" rows.
        returned = list(table.primary_key.columns) or list(table.c)[:1]
        inserted += len(session.execute(statement.returning(*returned)).all())
        if progress is not None:
            progress(table.name, len(chunk))
    return inserted


IMPORT_TRUST = DEFAULT_TRUST["import"]


def _insert_notes(session: Session, rows: list[dict[str, Any]], progress: Progress | None) -> int:
    """Notes without superseded_by first (it may point at any row), then the pointers."""
    pointers = {r["id"]: r.get("superseded_by") for r in rows}
    updated = {r["id"]: r.get("updated_at") for r in rows}
    table = TABLES["notes"]
    new_ids: set[uuid.UUID] = set()
    # Windows and evolved words depend on the notes around them here: rebuilt after the
    # import (memory.notes.rederive); until then no agent ranks by the imported windows.
    # An import vouches for no more than an import's trust, whatever the file claims.
    fresh = [
        {
            **r,
            "superseded_by": None,
            "derived_version": 1,
            "window_readers": [],
            "origin": r.get("origin") or "import",
            "trust": least_trusted([r.get("trust") or IMPORT_TRUST, IMPORT_TRUST]),
        }
        for r in rows
    ]
    for chunk in _chunks(fresh, BATCH):
        statement = insert(table).values(chunk).on_conflict_do_nothing().returning(table.c.id)
        new_ids.update(session.scalars(statement))
        if progress is not None:
            progress("notes", len(chunk))
    stored = _existing(session, Note.id, [p for p in pointers.values() if p])
    links = [
        {"note_id": i, "target": pointers[i], "updated": updated[i]}
        for i in sorted(new_ids)
        if pointers[i] in stored
    ]
    if links:
        session.execute(
            update(table)
            .where(table.c.id == bindparam("note_id"))
            # updated_at explicitly: its onupdate would otherwise stamp the import time.
            .values(superseded_by=bindparam("target"), updated_at=bindparam("updated")),
            links,
            execution_options={"synchronize_session": False},
        )
    _index_current(session, new_ids)
    return len(new_ids)


def _index_current(session: Session, note_ids: set[uuid.UUID]) -> None:
    """Count the newly inserted active, current notes in the user's BM25 statistics."""
    for chunk in _chunks(sorted(note_ids), ID_CHUNK):
        current = session.scalars(
            select(Note).where(Note.id.in_(chunk), Note.status == "active", Note.valid_to.is_(None))
        )
        index_note_terms(session=session, notes=list(current))


def _insert_events(session: Session, rows: list[dict[str, Any]], progress: Progress | None) -> int:
    if not rows:
        return 0
    table = TABLES["events"]
    scope = table.c.tenant_id == rows[0]["tenant_id"]
    before = session.scalar(select(func.count()).select_from(table).where(scope))
    for chunk in _chunks(rows, BATCH):
        params = [
            {k: r.get(k) for k in EVENT_COLUMNS} | {"data": json.dumps(r.get("data") or {})}
            for r in chunk
        ]
        session.execute(_EVENT_INSERT, params)
        if progress is not None:
            progress("events", len(chunk))
    after = session.scalar(select(func.count()).select_from(table).where(scope))
    return int((after or 0) - (before or 0))


def import_bundle(
    *,
    session: Session,
    bundle: ExportBundle,
    tenant_id: str | None = None,
    actor: str = "cli",
    progress: Progress | None = None,
) -> dict[str, dict[str, int]]:
    """Insert the bundle's rows; return {table: {"rows": n, "inserted": new}}."""
    tenant = tenant_id or bundle.header["tenant_id"]
    user = bundle.header["user_id"]
    rows = _decoded(bundle, tenant)
    _refuse_foreign(session, Note, [r["id"] for r in rows.get("notes", [])], tenant, user)
    _refuse_foreign(session, Episode, [r["id"] for r in rows.get("episodes", [])], tenant, user)
    rows["episodes"] = [
        {k: v for k, v in r.items() if k != "seq"}
        for r in sorted(rows.get("episodes", []), key=lambda r: r.get("seq") or 0)
    ]
    result: dict[str, dict[str, int]] = {}
    for name, table in TABLES.items():
        todo = _referenced(session, name, rows.get(name, []))
        if name == "notes":
            inserted = _insert_notes(session, todo, progress)
        elif name == "events":
            inserted = _insert_events(
                session, [{k: v for k, v in r.items() if k != "id"} for r in todo], progress
            )
        else:
            inserted = _insert(session, table, todo, progress)
        result[name] = {"rows": len(rows.get(name, [])), "inserted": inserted}
    _after_import(session, tenant, user, actor, bundle, result)
    return result


_REFERENCES = {
    "note_sources": (("note_id", "note"), ("episode_id", "episode")),
    "links": (("source_id", "note"), ("target_id", "note")),
    "conflicts": (("note_a_id", "note"), ("note_b_id", "note")),
}


def _referenced(session: Session, name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop rows whose notes or episodes are absent (an agent export may omit some)."""
    keys = _REFERENCES.get(name)
    if not keys or not rows:
        return rows
    columns = {"note": Note.id, "episode": Episode.id}
    present = {
        kind: _existing(
            session, columns[kind], [r[key] for r in rows for key, k in keys if k == kind]
        )
        for kind in {k for _, k in keys}
    }
    return [r for r in rows if all(r[key] in present[kind] for key, kind in keys)]


def _after_import(
    session: Session,
    tenant: str,
    user: str,
    actor: str,
    bundle: ExportBundle,
    result: dict[str, dict[str, int]],
) -> None:
    refresh_transactive_index(session=session, tenant_id=tenant, user_id=user)
    record_event(
        session=session,
        tenant_id=tenant,
        user_id=user,
        actor=actor,
        action="user.imported",
        entity_type="user",
        entity_id=user[:64],
        data={
            "source_tenant": bundle.header["tenant_id"],
            "exported_at": bundle.header.get("exported_at"),
            "inserted": {k: v["inserted"] for k, v in result.items()},
        },
    )
    session.flush()
