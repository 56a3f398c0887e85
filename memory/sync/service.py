"""Bidirectional filesystem sync of one user's notes (`sync.dir/<user>/*.md`).

`plan_sync` does the database side inside the caller's transaction and returns the file
operations; the caller commits, then `apply_plan` writes the files and the state file.

Invariants:
- A file edited since the last sync becomes a new version of its note (patch_note); a
  new file without an id becomes a memory through the write path (an episode, source
  `sync`); a deleted file forgets its note; a note created, changed or gone in the store
  rewrites, creates or removes its file.
- When both sides changed since the last sync (and they differ), nothing is overwritten:
  the store's version is written to `<name>.conflict.md` and the conflict reported until
  the person deletes that copy; then the file wins, unless the store changed yet again.
- Files are only written after the transaction commits, and only if they still have the
  hash they had when read (otherwise the next run sees the new edit), so a sync never
  loses a concurrent edit on either side.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer
from memory.clients.embedder import Embedder
from memory.config import Settings
from memory.errors import MemoryServiceError
from memory.notes.models import Note
from memory.sync import files as f
from memory.sync.files import FileEntry, ScannedFile
from memory.sync.pending import resolve_pending, write_unmapped
from memory.sync.plan import FileOp, SyncPlan, SyncReport
from memory.sync.run import STALE, SyncRun, load_links, render, revision, write_file
from memory.sync.writes import apply_edit, capture_file, forget_file_note


def _same(scanned: ScannedFile, note: Note) -> bool:
    """Whether the file already says what the store says (content and editable keys)."""
    parsed = scanned.parsed
    if parsed is None or parsed.body != note.content.strip():
        return False
    try:
        wanted = parsed.editable()
    except MemoryServiceError:
        return False
    return all(
        (list(note.tags or []) if key == "tags" else getattr(note, key)) == value
        for key, value in wanted.items()
    )


def _conflict(run: SyncRun, name: str, entry: FileEntry, note: Note | None) -> None:
    copy = f.conflict_name(name)
    text = (
        render(run, note)
        if note is not None
        else "This memory is no longer active in MUMA (forgotten, archived or replaced).\n"
        "Delete this copy to keep your file: it will then be stored as a new memory.\n"
    )
    run.plan.ops.append(FileOp(copy, text, None, None, force=True))
    entry.conflict = revision(note)
    run.report.conflicts.append(f"{name}: changed here and in MUMA; MUMA's version is in {copy}")


def _apply_file(
    run: SyncRun, name: str, scanned: ScannedFile, entry: FileEntry, note: Note | None
) -> None:
    if note is None:  # the note is gone and the person kept the file: store it anew
        del run.state.files[name]
        _capture(run, name, scanned)
        return
    try:
        new = apply_edit(
            session=run.session,
            viewer=run.viewer,
            note=note,
            parsed=scanned.parsed,
            settings=run.settings,
            embedder=run.embedder,
            file_name=name,
        )
    except MemoryServiceError as exc:
        run.report.errors.append(f"{name}: {exc.message}")
        return
    if new.id != note.id:
        run.plan.relink_ids.append(new.id)
    run.current[str(new.lineage_id)] = new
    fallback = FileEntry(str(new.lineage_id), str(new.id), f.note_revision(new), scanned.hash)
    write_file(run, name, new, scanned.hash, fallback)
    run.report.applied.append(name)


def _known(run: SyncRun, name: str, scanned: ScannedFile, entry: FileEntry) -> None:
    note = run.current.get(entry.lineage_id)
    store = revision(note)
    if entry.conflict is not None:
        if (run.plan.directory / f.conflict_name(name)).exists():
            run.report.conflicts.append(f"{name}: unresolved (see {f.conflict_name(name)})")
            return
        if store == entry.conflict:  # resolved by deleting the copy: the file wins
            entry.conflict, entry.revision, entry.hash = None, store, ""
    if scanned.error is not None:
        run.report.errors.append(f"{name}: {scanned.error}")
        return
    file_changed, store_changed = scanned.hash != entry.hash, store != entry.revision
    if note is not None and (
        _same(scanned, note) or not (file_changed or store_changed or entry.render)
    ):
        entry.revision, entry.conflict, entry.render = store, None, False
        entry.hash = scanned.hash
        if render(run, note) != scanned.text:  # links or read-only keys are out of date
            write_file(run, name, note, scanned.hash, replace(entry))
        return
    if not file_changed:
        _store_wins(run, name, scanned, entry, note)
    elif not store_changed:
        _apply_file(run, name, scanned, entry, note)
    else:
        _conflict(run, name, entry, note)


def _store_wins(
    run: SyncRun, name: str, scanned: ScannedFile, entry: FileEntry, note: Note | None
) -> None:
    fallback = replace(entry)
    if note is None:
        run.plan.ops.append(FileOp(name, None, scanned.hash, fallback))
        del run.state.files[name]
        run.report.removed.append(name)
        return
    write_file(run, name, note, scanned.hash, fallback)
    run.report.written.append(name)


def _deleted(run: SyncRun, name: str, entry: FileEntry) -> None:
    """The file is gone: forget its note, unless the note changed in the store since."""
    note = run.current.get(entry.lineage_id)
    if note is None:
        del run.state.files[name]
        return
    if revision(note) in (entry.revision, entry.conflict):
        try:
            forget_file_note(session=run.session, viewer=run.viewer, note=note, file_name=name)
        except MemoryServiceError as exc:
            run.report.errors.append(f"{name}: {exc.message}")
            return
        del run.current[entry.lineage_id]
        del run.state.files[name]
        run.report.forgotten.append(name)
        return
    write_file(run, name, note, None, replace(entry))
    run.report.conflicts.append(f"{name}: deleted here but changed in MUMA since; restored")


def _capture(run: SyncRun, name: str, scanned: ScannedFile) -> None:
    try:
        episode_id = capture_file(
            session=run.session,
            viewer=run.viewer,
            settings=run.settings,
            parsed=scanned.parsed,
            file_name=name,
            file_hash=scanned.hash,
        )
    except MemoryServiceError as exc:
        run.report.errors.append(f"{name}: {exc.message}")
        return
    run.state.pending[name] = f.PendingEntry(str(episode_id), scanned.hash)
    run.plan.episode_ids.append(episode_id)
    run.report.captured.append(name)


def _adopt(run: SyncRun, name: str, scanned: ScannedFile, note_ref: str) -> None:
    """A file naming a note id the state does not know (state lost, file copied in)."""
    try:
        note = run.session.get(Note, uuid.UUID(note_ref))
    except ValueError:
        note = None
    if note is None or (note.tenant_id, note.user_id) != (run.viewer.tenant_id, run.viewer.user_id):
        run.report.errors.append(f"{name}: no memory {note_ref} for this user")
        return
    current = run.current.get(str(note.lineage_id))
    if current is None:
        run.report.errors.append(
            f"{name}: memory {note_ref} is no longer active; remove its id to store it anew"
        )
        return
    other = run.state.lineages().get(str(note.lineage_id))
    if other is not None:
        run.report.errors.append(f"{name}: the same memory as {other}")
        return
    known = f.note_revision(note) if note.id == current.id else STALE
    entry = FileEntry(str(note.lineage_id), str(note.id), known, "")
    run.state.files[name] = entry
    _known(run, name, scanned, entry)


def plan_sync(
    *,
    session: Session,
    directory: Path,
    tenant_id: str,
    user_id: str,
    settings: Settings,
    embedder: Embedder,
) -> SyncPlan:
    """Apply file changes to the store and plan the file changes; nothing is written yet."""
    state = f.load_state(directory, tenant_id, user_id)
    report = SyncReport(tenant_id, user_id, str(directory))
    notes = session.scalars(
        select(Note).where(
            Note.tenant_id == tenant_id,
            Note.user_id == user_id,
            Note.status == "active",
            Note.valid_to.is_(None),
        )
    )
    current = {str(n.lineage_id): n for n in notes}
    run = SyncRun(
        session=session,
        viewer=Viewer(tenant_id, user_id, None),
        settings=settings,
        embedder=embedder,
        plan=SyncPlan(directory, state, report),
        files=f.scan(directory),
        current=current,
        links=load_links(session, [n.id for n in current.values()]),
    )
    resolve_pending(run)
    for name, entry in list(state.files.items()):
        if name not in run.files:
            _deleted(run, name, entry)
    for name, scanned in run.files.items():
        if name in state.files:
            _known(run, name, scanned, state.files[name])
        elif scanned.error is not None:
            report.errors.append(f"{name}: {scanned.error}")
        elif scanned.parsed is not None and scanned.parsed.note_id:
            _adopt(run, name, scanned, scanned.parsed.note_id)
        elif name in state.pending and state.pending[name].hash == scanned.hash:
            continue  # already sent through the write path, reported above
        else:
            _capture(run, name, scanned)
    write_unmapped(run)
    return run.plan
