"""A sync's outcome before and after the files are touched: the plan and the report.

Invariants: `apply_plan` runs after the database transaction committed; it writes or
deletes a file only if the file still has the hash it had when read (`expect`), and
otherwise keeps the op's `fallback` state entry, so the next run sees the newer edit;
the state file is written last, atomically.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from memory.sync import files as f
from memory.sync.files import FileEntry, SyncState


@dataclass(frozen=True)
class FileOp:
    """Write (text) or delete (None) `name`, if it still has hash `expect` (None: absent)."""

    name: str
    text: str | None
    expect: str | None
    fallback: FileEntry | None  # the state entry to keep when the file changed meanwhile
    force: bool = False  # conflict copies are MUMA's own files: always (over)written


@dataclass
class SyncReport:
    tenant_id: str
    user_id: str
    directory: str
    written: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    captured: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in vars(self).items() if isinstance(v, list)}


@dataclass
class SyncPlan:
    directory: Path
    state: SyncState
    report: SyncReport
    ops: list[FileOp] = field(default_factory=list)
    episode_ids: list[uuid.UUID] = field(default_factory=list)
    relink_ids: list[uuid.UUID] = field(default_factory=list)


def apply_plan(plan: SyncPlan) -> SyncReport:
    """Write the planned files (each only if unchanged since read), then the state file."""
    for op in plan.ops:
        path = plan.directory / op.name
        if not op.force and f.current_hash(path) != op.expect:
            if op.fallback is None:
                plan.state.files.pop(op.name, None)
            else:
                plan.state.files[op.name] = op.fallback
            plan.report.deferred.append(op.name)
            continue
        if op.text is None:
            path.unlink(missing_ok=True)
        else:
            f.write_atomic(path, op.text)
    f.write_atomic(plan.directory / f.STATE_FILE, plan.state.to_json())
    return plan.report
