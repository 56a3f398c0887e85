"""The files side of filesystem sync: note files, their frontmatter, and the sync state.

A note file is markdown with YAML frontmatter; the body is the note's content. Editable
keys: kind, domain, visibility, tags, pinned (and the body); id, created_at, valid_from,
valid_to, revision and links are written by MUMA and ignored when read back.

Invariants: a note's `revision` changes exactly when something a file shows and a person
may edit changes (version, content, editable keys, status), never on a mere access, so an
access is not mistaken for a concurrent edit; files and the state file are written
atomically (temporary file + rename); one sync per user directory runs at a time (flock).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memory.errors import ConflictError, InvalidInputError
from memory.notes.models import Note

STATE_FILE = ".muma-sync.json"
LOCK_FILE = ".muma-sync.lock"
CONFLICT_SUFFIX = ".conflict.md"
EDITABLE = ("kind", "domain", "visibility", "tags", "pinned")
STATE_VERSION = 1


def user_directory(root: Path, user_id: str) -> Path:
    """`root/<user>`; refuses user ids that are not a single safe path component."""
    if not user_id or user_id in (".", "..") or "/" in user_id or "\x00" in user_id:
        raise InvalidInputError(f"user id {user_id!r} cannot be used as a directory name")
    return root / user_id


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def note_revision(note: Note) -> str:
    shown = [
        note.content,
        note.status,
        note.kind,
        note.domain,
        note.visibility,
        list(note.tags or []),
        bool(note.pinned),
    ]
    return f"{note.version}.{digest(json.dumps(shown).encode())[:10]}"


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def render_note(note: Note, links: list[dict[str, str]]) -> str:
    meta = {
        "id": str(note.id),
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "tags": list(note.tags or []),
        "pinned": bool(note.pinned),
        "created_at": _iso(note.created_at),
        "valid_from": _iso(note.valid_from),
        "valid_to": _iso(note.valid_to),
        "revision": note_revision(note),
        "links": links,
    }
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n{note.content.strip()}\n"


@dataclass(frozen=True)
class ParsedFile:
    meta: dict[str, Any]
    body: str

    @property
    def note_id(self) -> str | None:
        value = self.meta.get("id")
        return str(value) if value else None

    def editable(self) -> dict[str, Any]:
        """The editable keys present, type-checked (InvalidInputError names the key)."""
        out: dict[str, Any] = {}
        for key in EDITABLE:
            if key not in self.meta or self.meta[key] is None:
                continue
            value = self.meta[key]
            if key == "pinned" and not isinstance(value, bool):
                raise InvalidInputError("pinned must be true or false")
            if key == "tags":
                if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                    raise InvalidInputError("tags must be a list of strings")
            elif key != "pinned" and not isinstance(value, str):
                raise InvalidInputError(f"{key} must be a string")
            out[key] = value
        return out


_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def parse_note(text: str) -> ParsedFile:
    """Frontmatter and body; a file without frontmatter is all body (a new memory)."""
    match = _FRONT.match(text)
    if match is None:
        if text.startswith("---"):
            raise InvalidInputError("frontmatter starts with --- but never ends")
        return ParsedFile({}, text.strip())
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"invalid YAML frontmatter: {exc}".splitlines()[0]) from exc
    if not isinstance(meta, dict):
        raise InvalidInputError("frontmatter must be a YAML mapping")
    return ParsedFile(meta, text[match.end() :].strip())


def file_name(note: Note, taken: set[str]) -> str:
    """`<first words>-<lineage prefix>.md`, stable across versions of the note."""
    words = re.findall(r"[a-z0-9]+", note.content.lower())
    slug = "-".join(words[:6])[:48].strip("-") or "note"
    base = f"{slug}-{note.lineage_id.hex[:8]}"
    name, n = f"{base}.md", 1
    while name in taken:
        n += 1
        name = f"{base}-{n}.md"
    return name


def conflict_name(name: str) -> str:
    return name[: -len(".md")] + CONFLICT_SUFFIX


@dataclass
class FileEntry:
    """A file known to map to one note lineage, as of the last sync."""

    lineage_id: str
    note_id: str
    revision: str
    hash: str
    conflict: str | None = None  # the store revision a reported conflict was about
    render: bool = False  # the file lacks MUMA's frontmatter yet (a just-captured file)


@dataclass
class PendingEntry:
    """A new file sent through the write path, waiting for its episode to finish."""

    episode_id: str
    hash: str


@dataclass
class SyncState:
    tenant_id: str
    user_id: str
    files: dict[str, FileEntry] = field(default_factory=dict)
    pending: dict[str, PendingEntry] = field(default_factory=dict)

    def lineages(self) -> dict[str, str]:
        return {e.lineage_id: name for name, e in self.files.items()}

    def to_json(self) -> str:
        data = {"version": STATE_VERSION, **asdict(self)}
        return json.dumps(data, indent=1, sort_keys=True) + "\n"


def load_state(directory: Path, tenant_id: str, user_id: str) -> SyncState:
    path = directory / STATE_FILE
    if not path.exists():
        return SyncState(tenant_id, user_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        state = SyncState(
            data["tenant_id"],
            data["user_id"],
            {k: FileEntry(**v) for k, v in data.get("files", {}).items()},
            {k: PendingEntry(**v) for k, v in data.get("pending", {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"cannot read sync state {path}: {exc}") from exc
    if (state.tenant_id, state.user_id) != (tenant_id, user_id):
        raise InvalidInputError(
            f"{directory} is synced for tenant '{state.tenant_id}' user '{state.user_id}'"
        )
    return state


def write_atomic(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".muma-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def sync_lock(directory: Path) -> Iterator[None]:
    """Hold the user directory's lock; ConflictError if another sync holds it."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise ConflictError(f"a sync of {directory} is already running") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class ScannedFile:
    hash: str
    text: str | None
    parsed: ParsedFile | None
    error: str | None


def scan(directory: Path) -> dict[str, ScannedFile]:
    """Every note file (*.md, not hidden, not a conflict copy), read and parsed."""
    out: dict[str, ScannedFile] = {}
    for path in sorted(directory.glob("*.md")):
        name = path.name
        if name.startswith(".") or name.endswith(CONFLICT_SUFFIX) or not path.is_file():
            continue
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            out[name] = ScannedFile("", None, None, f"cannot read: {exc}")
            continue
        try:
            out[name] = ScannedFile(digest(data), text, parse_note(text), None)
        except InvalidInputError as exc:
            out[name] = ScannedFile(digest(data), text, None, exc.message)
    return out


def current_hash(path: Path) -> str | None:
    """The file's hash now, None if it does not exist or cannot be read."""
    try:
        return digest(path.read_bytes())
    except OSError:
        return None
