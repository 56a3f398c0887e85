"""`muma export` / `muma import`: a faithful, idempotent round trip into an empty database,
and GET /v1/export (streamed, scoped to what the caller may see)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.activation.service import record_note_accesses
from memory.cli.main import cli
from memory.config import get_settings, reset_settings_cache
from memory.conflicts.models import Conflict
from memory.db import session_scope
from memory.db_url import sqlalchemy_url
from memory.notes.models import LexiconTerm, LexiconTotal
from memory.ops.export import TABLES
from memory.ops.export_files import parse_export
from memory.ops.migrations import upgrade_database
from memory.ops.models import AuditEvent
from memory.ops.rowcodec import encode_row
from memory.types import utcnow
from tests.integration.test_cli_commands import memories  # noqa: F401 - a fixture
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration
USER_SCOPED = ("episodes", "notes", "links", "conflicts", "tombstones")


@pytest.fixture()
def history(
    api_client: TestClient,
    memories: dict[str, str],  # noqa: F811
    tokens: dict[str, str],
    user_id: str,
    tenant_id: str,
) -> dict[str, str]:
    """Versions, a manual link, a pin, an archived note, accesses and a conflict."""
    admin = bearer(tokens["admin"])
    revised = api_client.patch(
        f"/v1/memories/{memories['budget']}",
        json={"user_id": user_id, "content": "Alice's grocery budget is 350 euros a month."},
        headers=admin,
    )
    assert revised.status_code == 200, revised.text
    budget_v2 = revised.json()["id"]
    api_client.patch(f"/v1/memories/{budget_v2}", json={"user_id": user_id, "pinned": True},
                     headers=admin)  # fmt: skip
    linked = api_client.post(
        "/v1/links",
        json={"user_id": user_id, "source_id": memories["sister"], "target_id": budget_v2},
        headers=admin,
    )
    assert linked.status_code == 201, linked.text
    with session_scope() as session:
        record_note_accesses(
            session=session, note_ids=[uuid.UUID(memories["sister"])],
            at=utcnow() - timedelta(hours=3), settings=get_settings().activation,
        )  # fmt: skip
        a, b = sorted([uuid.UUID(memories["sister"]), uuid.UUID(budget_v2)])
        session.add(Conflict(tenant_id=tenant_id, user_id=user_id, note_a_id=a, note_b_id=b,
                             agent_a_id="assistant-1", agent_b_id="banker", similarity=0.8,
                             classification="compatible"))  # fmt: skip
    archived = api_client.post(f"/v1/memories/{memories['blood']}/archive",
                               params={"user_id": user_id}, headers=admin)  # fmt: skip
    assert archived.status_code == 200, archived.text
    return {**memories, "budget_v2": budget_v2}


def _snapshot(session: Session, tenant_id: str, user_id: str) -> dict[str, Any]:
    """Every exported table's rows of the user, encoded, plus the BM25 lexicon."""
    out: dict[str, Any] = {}
    for name in USER_SCOPED:
        table = TABLES[name]
        query = select(table).where(table.c.tenant_id == tenant_id, table.c.user_id == user_id)
        rows = [encode_row(table, r) for r in session.execute(query).mappings()]
        for row in rows:
            row.pop("seq", None)  # reassigned by the importing database, order kept
        out[name] = sorted(rows, key=lambda r: r.get("id") or r["note_id"])
    note_ids = [uuid.UUID(r["id"]) for r in out["notes"]]
    sources = TABLES["note_sources"]
    out["note_sources"] = sorted(
        (encode_row(sources, r) for r in session.execute(
            select(sources).where(sources.c.note_id.in_(note_ids))).mappings()),
        key=lambda r: (r["note_id"], r["episode_id"]),
    )  # fmt: skip
    out["events"] = sorted(
        (e.actor, e.action, e.entity_id, e.created_at.isoformat())
        for e in session.scalars(select(AuditEvent).where(
            AuditEvent.tenant_id == tenant_id, AuditEvent.user_id == user_id,
            AuditEvent.action != "user.imported"))
    )  # fmt: skip
    out["lexicon"] = sorted(
        (t.field, t.term, t.doc_count)
        for t in session.scalars(select(LexiconTerm).where(
            LexiconTerm.tenant_id == tenant_id, LexiconTerm.user_id == user_id))
        if t.doc_count
    )  # fmt: skip
    out["totals"] = sorted(
        (t.field, t.doc_count, t.term_total)
        for t in session.scalars(select(LexiconTotal).where(
            LexiconTotal.tenant_id == tenant_id, LexiconTotal.user_id == user_id))
    )  # fmt: skip
    return out


@contextmanager
def cli_database(url: str) -> Iterator[None]:
    """Point settings (the CLI, session_scope) at another database for a while."""
    previous = os.environ["MUMA_DATABASE_URL"]
    os.environ["MUMA_DATABASE_URL"] = url
    reset_settings_cache()
    try:
        yield
    finally:
        os.environ["MUMA_DATABASE_URL"] = previous
        reset_settings_cache()


def _snapshot_now(tenant_id: str, user_id: str) -> dict[str, Any]:
    with session_scope() as session:
        return _snapshot(session, tenant_id, user_id)


@contextmanager
def new_database(database_url: str) -> Iterator[str]:
    """Another migrated, empty database on the same server, dropped afterwards."""
    name = f"import_{uuid.uuid4().hex[:8]}"
    admin = database_url.replace("/muma?", "/postgres?")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url.replace("/muma?", f"/{name}?")
    upgrade_database(url=sqlalchemy_url(url))
    try:
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture()
def empty_database(database_url: str) -> Iterator[str]:
    with new_database(database_url) as url:
        yield url


def _differences(got: list[Any], want: list[Any]) -> list[Any]:
    """The fields that differ between row lists (for a readable assertion message)."""
    if len(got) != len(want):
        return [f"{len(got)} rows, expected {len(want)}"]
    return [
        (k, a.get(k), b.get(k)) if isinstance(a, dict) else (a, b)
        for a, b in zip(got, want, strict=True)
        for k in (a if isinstance(a, dict) else [None])
        if (a.get(k) != b.get(k) if isinstance(a, dict) else a != b)
    ]


def _export(tmp_path: Path, user_id: str, tenant_id: str, fmt: str) -> Path:
    path = tmp_path / f"export.{fmt}"
    result = CliRunner().invoke(
        cli, ["export", "--user", user_id, "--tenant", tenant_id, "--format", fmt, "-o", str(path)]
    )
    assert result.exit_code == 0, result.output
    return path


def _import_table(output: str) -> dict[str, tuple[int, int]]:
    """{table: (rows, new)} as `muma import` printed them (negative numbers included)."""
    rows = {}
    for line in output.splitlines():
        parts = line.replace("│", " ").split()
        if len(parts) == 3 and parts[0] in TABLES:
            rows[parts[0]] = (int(parts[1]), int(parts[2]))
    return rows


def _new_rows(output: str) -> dict[str, int]:
    return {table: new for table, (_, new) in _import_table(output).items()}


def test_round_trip_into_an_empty_database_is_faithful_and_idempotent(
    history: dict[str, str],
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
    database_url: str,
    empty_database: str,
) -> None:
    files = {
        fmt: _export(tmp_path, user_id, tenant_id, fmt) for fmt in ("jsonl", "json", "markdown")
    }
    original = _snapshot_now(tenant_id, user_id)
    assert len(original["notes"]) == 4  # three notes, one of them revised (two rows)
    assert {r["status"] for r in original["notes"]} == {"active", "archived"}
    assert any(r["pinned"] for r in original["notes"]) and original["conflicts"]
    assert any(r["created_by"] == "user" for r in original["links"])
    assert any(r["sparse_embedding"] for r in original["notes"])  # carried as text

    with cli_database(empty_database):
        first = CliRunner().invoke(cli, ["import", str(files["jsonl"])])
        assert first.exit_code == 0, first.output
        assert _new_rows(first.output)["notes"] == 4
        # Into an empty database every row is new, and counted so (a -1 "new" was shown).
        counted = _import_table(first.output)
        assert counted and all(rows == new for rows, new in counted.values()), first.output
        imported = _snapshot_now(tenant_id, user_id)
        for key in original:
            assert imported[key] == original[key], (key, _differences(imported[key], original[key]))

        for fmt in ("jsonl", "json", "markdown"):
            again = CliRunner().invoke(cli, ["import", str(files[fmt])])
            assert again.exit_code == 0, again.output
            assert set(_new_rows(again.output).values()) == {0}, (fmt, again.output)
            assert _import_table(again.output).keys() == counted.keys()
        assert _snapshot_now(tenant_id, user_id) == imported

        moved = CliRunner().invoke(cli, ["import", str(files["jsonl"]), "--tenant", "elsewhere"])
        assert moved.exit_code == 2 and "already exists for another tenant" in moved.output

    with new_database(database_url) as other, cli_database(other):
        moved = CliRunner().invoke(cli, ["import", str(files["json"]), "--tenant", "moved"])
        assert moved.exit_code == 0, moved.output
        relocated = _snapshot_now("moved", user_id)
    for key in USER_SCOPED:
        for row in relocated[key]:
            assert row.pop("tenant_id") == "moved"
        assert relocated[key] == [
            {k: v for k, v in r.items() if k != "tenant_id"} for r in original[key]
        ], key
    assert relocated["lexicon"] == original["lexicon"]


def test_markdown_is_readable_and_all_formats_carry_the_same_rows(
    history: dict[str, str], tenant_id: str, user_id: str, tmp_path: Path
) -> None:
    bundles = {
        fmt: parse_export(_export(tmp_path, user_id, tenant_id, fmt).read_text())
        for fmt in ("jsonl", "json", "markdown")
    }
    assert bundles["jsonl"].tables == bundles["json"].tables == bundles["markdown"].tables
    text = (tmp_path / "export.markdown").read_text()
    assert text.startswith(f"# Memories of {user_id}")
    assert "350 euros" in text and "pinned" in text
    note = next(r for r in bundles["jsonl"].tables["notes"] if r["id"] == history["budget_v2"])
    assert len(note["embedding"]) == 384 and note["embedding_model"]
    assert note["pinned"] is True and note["version"] == 2
    assert note["origin"] and note["trust"] in ("high", "medium", "low")
    assert " · from " in text  # each memory says where it came from


def test_bad_input_is_one_clear_line(database_url: str, tmp_path: Path, user_id: str) -> None:
    missing = CliRunner().invoke(cli, ["import", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "cannot read" in CliRunner().invoke(cli, ["import", str(binary)]).output
    other = tmp_path / "notes.md"
    other.write_text("# my notes\n\nnot an export\n")
    result = CliRunner().invoke(cli, ["import", str(other)])
    assert result.exit_code == 2 and "is not a MUMA export" in result.output
    truncated = tmp_path / "cut.jsonl"
    header = {"format": "muma-export", "version": 1, "tenant_id": "t", "user_id": user_id}
    truncated.write_text(json.dumps(header) + "\n")
    result = CliRunner().invoke(cli, ["import", str(truncated)])
    assert result.exit_code == 2 and "truncated" in result.output
    bad_format = CliRunner().invoke(cli, ["export", "--user", user_id, "--format", "xml",
                                          "-o", str(tmp_path / "x")])  # fmt: skip
    assert bad_format.exit_code == 2 and "xml" in bad_format.output


def test_http_export_streams_what_the_caller_may_see(
    api_client: TestClient, history: dict[str, str], tokens: dict[str, str], user_id: str
) -> None:
    full = api_client.get("/v1/export", params={"user_id": user_id, "format": "jsonl"},
                          headers=bearer(tokens["viewer"]))  # fmt: skip
    assert full.status_code == 200, full.text
    assert full.headers["content-type"].startswith("application/x-ndjson")
    bundle = parse_export(full.text)
    assert {r["id"] for r in bundle.tables["notes"]} >= set(history.values())

    agent = api_client.get(
        "/v1/export",
        params={"user_id": user_id, "agent_id": "assistant-1", "format": "json"},
        headers=bearer(tokens["agent"]),
    )
    assert agent.status_code == 200, agent.text
    seen = parse_export(agent.text)
    ids = {r["id"] for r in seen.tables["notes"]}
    assert history["sister"] in ids and history["blood"] not in ids
    assert history["budget_v2"] not in ids  # the banker's private note
    assert "events" not in seen.tables and "conflicts" not in seen.tables
    cited = {r["episode_id"] for r in seen.tables["note_sources"]}
    assert {r["id"] for r in seen.tables["episodes"]} == cited

    unknown = api_client.get("/v1/export", params={"user_id": "nobody"},
                             headers=bearer(tokens["viewer"]))  # fmt: skip
    assert unknown.status_code == 404
    markdown = api_client.get("/v1/export", params={"user_id": user_id, "format": "markdown"},
                              headers=bearer(tokens["admin"]))  # fmt: skip
    assert markdown.text.startswith(f"# Memories of {user_id}")
