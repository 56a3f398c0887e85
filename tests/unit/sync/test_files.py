"""Note files, revisions, names, the state file and the compare-and-swap file writes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.errors import ConflictError, InvalidInputError
from memory.notes.models import Note
from memory.sync import files as f
from memory.sync.plan import FileOp, SyncPlan, SyncReport, apply_plan

WHEN = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)


def note(**changes: object) -> Note:
    note_id = uuid.UUID("3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f")
    values: dict[str, object] = dict(
        id=note_id, lineage_id=note_id, version=1, tenant_id="t", user_id="alice",
        agent_id="assistant", content="Alice's sister lives in Porto.", kind="stable",
        domain="family", visibility="open", tags=["family"], pinned=False, status="active",
        created_at=WHEN, valid_from=WHEN, valid_to=None, access_times=[WHEN], access_count=1,
    )  # fmt: skip
    values.update(changes)
    return Note(**values)


def test_render_then_parse_gives_back_content_and_editable_keys() -> None:
    text = f.render_note(note(), [{"id": str(uuid.uuid4()), "kind": "related"}])
    parsed = f.parse_note(text)
    assert parsed.body == "Alice's sister lives in Porto."
    assert parsed.note_id == "3f2c8a4e-0b7d-4c55-9d7e-2a1b0c9d8e7f"
    assert parsed.editable() == {
        "kind": "stable", "domain": "family", "visibility": "open", "tags": ["family"],
        "pinned": False,
    }  # fmt: skip
    assert parsed.meta["revision"] == f.note_revision(note())
    assert parsed.meta["links"][0]["kind"] == "related"


def test_a_file_without_frontmatter_is_all_body() -> None:
    parsed = f.parse_note("\nMy favourite tea is jasmine.\n")
    assert parsed.meta == {} and parsed.body == "My favourite tea is jasmine."
    assert parsed.note_id is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nkind: stable\nno end", "never ends"),
        ("---\n[unclosed\n---\nbody", "invalid YAML"),
        ("---\n- a list\n---\nbody", "mapping"),
    ],
)
def test_broken_frontmatter_is_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        f.parse_note(text)


@pytest.mark.parametrize(
    ("meta", "message"),
    [("pinned: yes please", "pinned"), ("tags: fish", "tags"), ("kind: [a]", "kind")],
)
def test_editable_keys_are_type_checked(meta: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        f.parse_note(f"---\n{meta}\n---\nbody").editable()


def test_revision_follows_what_a_person_sees_not_accesses() -> None:
    base = f.note_revision(note())
    assert f.note_revision(note(access_count=9, access_times=[WHEN, WHEN])) == base
    assert f.note_revision(note(updated_at=datetime.now(UTC))) == base
    for change in ({"content": "Porto, Portugal."}, {"pinned": True}, {"tags": ["x"]},
                   {"visibility": "private"}, {"version": 2}, {"status": "archived"}):  # fmt: skip
        assert f.note_revision(note(**change)) != base, change


def test_file_names_are_slugged_stable_and_unique() -> None:
    name = f.file_name(note(), set())
    assert name == "alice-s-sister-lives-in-porto-3f2c8a4e.md"
    assert f.file_name(note(content="Version two"), set()).endswith("-3f2c8a4e.md")
    assert f.file_name(note(), {name}) == "alice-s-sister-lives-in-porto-3f2c8a4e-2.md"
    assert f.file_name(note(content="?!"), set()) == "note-3f2c8a4e.md"
    assert f.conflict_name(name) == "alice-s-sister-lives-in-porto-3f2c8a4e.conflict.md"


@pytest.mark.parametrize("user", ["", ".", "..", "a/b"])
def test_user_ids_that_are_not_a_directory_name_are_refused(tmp_path: Path, user: str) -> None:
    with pytest.raises(InvalidInputError):
        f.user_directory(tmp_path, user)


def test_state_round_trips_and_belongs_to_one_user(tmp_path: Path) -> None:
    state = f.SyncState("t", "alice")
    state.files["a.md"] = f.FileEntry("l", "n", "1.abc", "hash", conflict="2.def")
    state.pending["b.md"] = f.PendingEntry(str(uuid.uuid4()), "h2")
    f.write_atomic(tmp_path / f.STATE_FILE, state.to_json())
    assert f.load_state(tmp_path, "t", "alice") == state
    with pytest.raises(InvalidInputError, match="synced for tenant 't' user 'alice'"):
        f.load_state(tmp_path, "t", "bob")
    (tmp_path / f.STATE_FILE).write_text("{not json")
    with pytest.raises(InvalidInputError, match="cannot read sync state"):
        f.load_state(tmp_path, "t", "alice")


def test_scan_skips_hidden_files_and_conflict_copies_and_reports_bad_ones(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("A memory.")
    (tmp_path / "good.conflict.md").write_text("MUMA's copy")
    (tmp_path / ".hidden.md").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "binary.md").write_bytes(b"\xff\xfe")
    (tmp_path / "broken.md").write_text("---\nkind: [\n---\nx")
    scanned = f.scan(tmp_path)
    assert set(scanned) == {"good.md", "binary.md", "broken.md"}
    assert scanned["good.md"].parsed is not None and scanned["good.md"].error is None
    assert "cannot read" in (scanned["binary.md"].error or "")
    assert "invalid YAML" in (scanned["broken.md"].error or "")


def test_apply_plan_never_overwrites_a_file_changed_since_it_was_read(tmp_path: Path) -> None:
    (tmp_path / "edited.md").write_text("edited meanwhile")
    (tmp_path / "same.md").write_text("as read")
    read_hash = f.digest(b"as read")
    state = f.SyncState("t", "alice")
    old = f.FileEntry("l1", "n1", "1.a", "old-hash")
    state.files["edited.md"] = f.FileEntry("l1", "n1", "2.b", "new-hash")
    state.files["same.md"] = f.FileEntry("l2", "n2", "2.c", "x")
    state.files["new.md"] = f.FileEntry("l3", "n3", "1.d", "y")
    plan = SyncPlan(tmp_path, state, SyncReport("t", "alice", str(tmp_path)))
    plan.ops += [
        FileOp("edited.md", "MUMA's text", read_hash, old),
        FileOp("same.md", "MUMA's text", read_hash, None),
        FileOp("new.md", "brand new", None, None),
        FileOp("same.conflict.md", "copy", "whatever", None, force=True),
    ]
    report = apply_plan(plan)
    assert (tmp_path / "edited.md").read_text() == "edited meanwhile"
    assert state.files["edited.md"] == old and report.deferred == ["edited.md"]
    assert (tmp_path / "same.md").read_text() == "MUMA's text"
    assert (tmp_path / "new.md").read_text() == "brand new"
    assert (tmp_path / "same.conflict.md").read_text() == "copy"
    assert f.load_state(tmp_path, "t", "alice") == state


def test_one_sync_per_directory_at_a_time(tmp_path: Path) -> None:
    with f.sync_lock(tmp_path), pytest.raises(ConflictError), f.sync_lock(tmp_path):
        pass
    with f.sync_lock(tmp_path):  # released again
        pass
