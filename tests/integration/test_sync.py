"""Filesystem sync end to end: `muma sync` and the beat task against the real services.

Edits, creations and deletions flow both ways; a file changed on both sides is reported
as a conflict and neither side is overwritten."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.cli.main import cli
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.models import Episode
from memory.notes.models import Note, NoteSource
from memory.sync.files import STATE_FILE, parse_note
from tasks.sync import sync_all_users
from tests.integration.test_cli_commands import memories  # noqa: F401 - a fixture
from tests.support.helpers import bearer, wait_for_workers_idle, wait_until

pytestmark = pytest.mark.integration


def sync(user_id: str, tenant_id: str, root: Path | None, *extra: str) -> tuple[Result, Any]:
    """`muma sync` once the pipeline has settled: a note's link stage merges tags into its
    neighbours after its episode is done, and a sync during it sees a store change."""
    wait_for_workers_idle()
    args = ["sync", "--user", user_id, "--tenant", tenant_id, "--json", *extra]
    if root is not None:
        args += ["--dir", str(root)]
    result = CliRunner().invoke(cli, args)
    try:
        return result, json.loads(result.output)
    except ValueError:
        return result, None


def files_by_id(directory: Path) -> dict[str, Path]:
    out = {}
    for path in directory.glob("*.md"):
        if not path.name.endswith(".conflict.md"):
            out[str(parse_note(path.read_text()).note_id)] = path
    return out


def current(note_id: str) -> Note:
    """The current version of the note's lineage (whatever its status)."""
    with session_scope() as session:
        lineage = session.get(Note, uuid.UUID(note_id)).lineage_id  # type: ignore[union-attr]
        return session.scalars(
            select(Note).where(Note.lineage_id == lineage).order_by(Note.version.desc())
        ).first()  # type: ignore[return-value]


def edit_body(path: Path, body: str) -> None:
    text = path.read_text()
    head, _, _ = text.rpartition("---\n")
    path.write_text(f"{head}---\n\n{body}\n")


def test_edits_creations_and_deletions_flow_both_ways(
    api_client: TestClient,
    memories: dict[str, str],  # noqa: F811
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
) -> None:
    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 0, result.output
    directory = tmp_path / user_id
    assert len(report["written"]) == 3 and (directory / STATE_FILE).is_file()
    files = files_by_id(directory)
    assert set(files) == set(memories.values())
    meta = parse_note(files[memories["budget"]].read_text()).meta
    assert meta["visibility"] == "private" and "groceries" in meta["tags"]
    assert {"created_at", "valid_from", "valid_to", "revision", "links"} <= set(meta)

    # A file edit becomes a new version; a frontmatter edit changes the note in place.
    edit_body(files[memories["sister"]], "Alice's sister lives in Lisbon now.")
    budget_text = files[memories["budget"]].read_text().replace("pinned: false", "pinned: true")
    files[memories["budget"]].write_text(budget_text)
    result, report = sync(user_id, tenant_id, tmp_path)
    assert sorted(report["applied"]) == sorted(
        [files[memories["sister"]].name, files[memories["budget"]].name]
    ), result.output
    sister = current(memories["sister"])
    assert sister.version == 2 and sister.content == "Alice's sister lives in Lisbon now."
    assert sister.status == "active" and str(sister.id) != memories["sister"]
    with session_scope() as session:
        old = session.get(Note, uuid.UUID(memories["sister"]))
        assert old is not None and old.valid_to is not None and old.superseded_by == sister.id
        pinned = session.get(Note, uuid.UUID(memories["budget"]))
        assert pinned is not None and pinned.pinned and pinned.version == 1
    assert parse_note(files[memories["sister"]].read_text()).note_id == str(sister.id)

    # Changes in the store reach the files: a revision rewrites, a forget removes.
    admin = bearer(tokens["admin"])
    revised = api_client.patch(
        f"/v1/memories/{memories['blood']}",
        json={"user_id": user_id, "content": "Alice's blood type is 0 negative."},
        headers=admin,
    )
    assert revised.status_code == 200, revised.text
    api_client.delete(f"/v1/memories/{memories['budget']}", params={"user_id": user_id},
                      headers=admin)  # fmt: skip
    result, report = sync(user_id, tenant_id, tmp_path)
    assert report["written"] == [files[memories["blood"]].name], result.output
    assert report["removed"] == [files[memories["budget"]].name]
    assert "0 negative" in files[memories["blood"]].read_text()
    assert not files[memories["budget"]].exists()

    # A deleted file forgets its memory.
    files[memories["sister"]].unlink()
    result, report = sync(user_id, tenant_id, tmp_path)
    assert report["forgotten"] == [files[memories["sister"]].name], result.output
    with session_scope() as session:  # erased, as a forget through the API erases
        assert session.get(Note, uuid.UUID(memories["sister"])) is None

    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 0 and not any(report[k] for k in ("written", "applied", "errors"))


def test_a_new_file_becomes_a_memory_through_the_write_path(
    memories: dict[str, str],  # noqa: F811
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
) -> None:
    sync(user_id, tenant_id, tmp_path)
    tea = tmp_path / user_id / "tea.md"
    tea.write_text(
        "---\nkind: preference\ntags: [drinks]\n---\nAlice's favourite tea is jasmine.\n"
    )
    result, report = sync(user_id, tenant_id, tmp_path, "--wait", "60")
    assert result.exit_code == 0, result.output
    assert report["captured"] == ["tea.md"] and report["pending"] == []
    note_id = parse_note(tea.read_text()).note_id
    assert note_id is not None, tea.read_text()
    with session_scope() as session:
        note = session.get(Note, uuid.UUID(note_id))
        assert note is not None and note.status == "active"
        assert "jasmine" in note.content and note.kind == "preference"
        assert "drinks" in note.tags and note.agent_id == get_settings().sync.agent_id
        source = session.scalar(
            select(Episode.source)
            .join(NoteSource, NoteSource.episode_id == Episode.id)
            .where(NoteSource.note_id == note.id)
        )
        assert source == "sync"
    assert len(files_by_id(tmp_path / user_id)) == 4  # no duplicate file for the new note


def _note_of_sync_episode(tenant_id: str, user_id: str) -> uuid.UUID | None:
    with session_scope() as session:
        return session.scalar(
            select(NoteSource.note_id)
            .join(Episode, Episode.id == NoteSource.episode_id)
            .where(
                Episode.tenant_id == tenant_id,
                Episode.user_id == user_id,
                Episode.source == "sync",
            )
        )


def _set_status(note_id: uuid.UUID, status: str) -> None:
    with session_scope() as session:
        session.get(Note, note_id).status = status  # type: ignore[union-attr]


def test_a_done_episode_whose_note_is_not_yet_active_stays_pending(
    memories: dict[str, str],  # noqa: F811
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
) -> None:
    """The episode is done once its note exists; the note counts once embedded and decided."""
    sync(user_id, tenant_id, tmp_path)
    tea = tmp_path / user_id / "tea.md"
    tea.write_text("Alice's favourite tea is jasmine.\n")
    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 0 and report["captured"] == ["tea.md"], result.output
    wait_until(lambda: _note_of_sync_episode(tenant_id, user_id) is not None, 60)
    note_id = _note_of_sync_episode(tenant_id, user_id)
    assert note_id is not None
    wait_until(lambda: current(str(note_id)).status == "active", 60)
    _set_status(note_id, "pending")  # as between construction and the embed/decide stages

    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["pending"] == ["tea.md"] and report["errors"] == []
    assert parse_note(tea.read_text()).note_id is None

    _set_status(note_id, "active")
    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 0 and report["pending"] == [], result.output
    assert parse_note(tea.read_text()).note_id == str(note_id)


def test_a_conflicting_edit_is_reported_and_nothing_is_overwritten(
    api_client: TestClient,
    memories: dict[str, str],  # noqa: F811
    tokens: dict[str, str],
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
) -> None:
    sync(user_id, tenant_id, tmp_path)
    path = files_by_id(tmp_path / user_id)[memories["sister"]]
    edit_body(path, "Alice's sister moved to Faro.")
    in_store = api_client.patch(
        f"/v1/memories/{memories['sister']}",
        json={"user_id": user_id, "content": "Alice's sister moved to Braga."},
        headers=bearer(tokens["admin"]),
    )
    assert in_store.status_code == 200, in_store.text

    result, report = sync(user_id, tenant_id, tmp_path)
    assert len(report["conflicts"]) == 1 and path.name in report["conflicts"][0], result.output
    copy = path.with_name(path.name.replace(".md", ".conflict.md"))
    assert "Braga" in copy.read_text() and "Faro" in path.read_text()
    assert current(memories["sister"]).content == "Alice's sister moved to Braga."

    _, report = sync(user_id, tenant_id, tmp_path)
    assert "unresolved" in report["conflicts"][0]
    assert "Faro" in path.read_text()

    copy.unlink()  # the person resolved it: their file wins
    result, report = sync(user_id, tenant_id, tmp_path)
    assert report["applied"] == [path.name] and not report["conflicts"], result.output
    assert current(memories["sister"]).content == "Alice's sister moved to Faro."


def test_bad_input(
    memories: dict[str, str],  # noqa: F811
    database_url: str,
    tenant_id: str,
    user_id: str,
    tmp_path: Path,
) -> None:
    unknown = CliRunner().invoke(cli, ["sync", "--user", "nobody", "--tenant", tenant_id,
                                       "--dir", str(tmp_path)])  # fmt: skip
    assert unknown.exit_code == 2 and "unknown user 'nobody'" in unknown.output
    assert not (tmp_path / "nobody").exists()
    bad_name = CliRunner().invoke(cli, ["sync", "--user", "..", "--dir", str(tmp_path)])
    assert bad_name.exit_code == 2

    sync(user_id, tenant_id, tmp_path)
    (tmp_path / user_id / "broken.md").write_text("---\nkind: [\n---\nSomething.\n")
    (tmp_path / user_id / "wrong.md").write_text("---\nkind: gossip\n---\nSomething else.\n")
    result, report = sync(user_id, tenant_id, tmp_path)
    assert result.exit_code == 1
    errors = "\n".join(report["errors"])
    assert "broken.md: invalid YAML" in errors and "wrong.md: kind must be one of" in errors
    (tmp_path / user_id / "broken.md").unlink()
    (tmp_path / user_id / "wrong.md").unlink()
    assert set(files_by_id(tmp_path / user_id)) == set(memories.values())  # untouched


def test_the_beat_task_syncs_every_synced_user(
    memories: dict[str, str],  # noqa: F811
    celery_worker: str,
    tenant_id: str,
    user_id: str,
) -> None:
    result, _ = sync(user_id, tenant_id, None)  # the default root: $MUMA_HOME/sync
    assert result.exit_code == 0, result.output
    path = files_by_id(get_settings().sync_dir / user_id)[memories["sister"]]
    path.write_text(path.read_text().replace("pinned: false", "pinned: true"))
    sync_all_users.apply_async()

    def pinned() -> bool:
        with session_scope() as session:
            return bool(session.get(Note, uuid.UUID(memories["sister"])).pinned)  # type: ignore[union-attr]

    wait_until(pinned, timeout=60)
