"""Files sent through the write path, and notes that have no file yet.

Invariants: a captured file is mapped to the note it became only when exactly one new
note carries its episode; a file merged into notes that already have files, or split
into several notes, is removed (if unchanged) and those notes keep or get their own
files; notes whose episode is still pending get no file, so none is written twice.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select

from memory.errors import MemoryServiceError
from memory.notes.models import Note, NoteSource
from memory.notes.service import episode_outcome
from memory.sync import files as f
from memory.sync.files import FileEntry
from memory.sync.plan import FileOp
from memory.sync.run import SyncRun, write_file


def resolve_pending(run: SyncRun) -> None:
    """Files sent through the write path earlier: map each to the note it became."""
    for name, pending in list(run.state.pending.items()):
        try:
            status, _, note_ids = episode_outcome(
                session=run.session, episode_id=uuid.UUID(pending.episode_id)
            )
        except MemoryServiceError:
            del run.state.pending[name]
            continue
        if status in ("queued", "processing") or _notes_still_pending(run, pending):
            run.report.pending.append(name)
        elif status == "failed":
            run.report.errors.append(f"{name}: the write path failed; edit the file to retry")
        else:
            _settle(run, name, pending, note_ids)


def _notes_still_pending(run: SyncRun, pending: f.PendingEntry) -> bool:
    """An episode is done once its notes exist; they count only once embedded and decided."""
    return (
        run.session.scalar(
            select(Note.id)
            .join(NoteSource, NoteSource.note_id == Note.id)
            .where(NoteSource.episode_id == uuid.UUID(pending.episode_id), Note.status == "pending")
            .limit(1)
        )
        is not None
    )


def _settle(run: SyncRun, name: str, pending: f.PendingEntry, note_ids: list[uuid.UUID]) -> None:
    by_id = {n.id: n for n in run.current.values()}
    notes = [by_id[i] for i in note_ids if i in by_id]
    mapped = run.state.lineages()
    fresh = [n for n in notes if str(n.lineage_id) not in mapped]
    scanned = run.files.get(name)
    if not notes:
        run.report.errors.append(
            f"{name}: nothing in it was stored as a memory; edit the file to retry"
        )
        return
    del run.state.pending[name]
    if scanned is None:
        return  # deleted while pending: its notes get files of their own below
    if len(notes) == 1 and fresh:
        note = fresh[0]
        run.state.files[name] = FileEntry(
            str(note.lineage_id), str(note.id), f.note_revision(note), pending.hash, render=True
        )
    elif scanned.hash == pending.hash:  # merged into known notes, or split into several
        run.plan.ops.append(FileOp(name, None, scanned.hash, None))
        del run.files[name]
        run.report.removed.append(f"{name} (stored as {len(notes)} memories with files)")


def write_unmapped(run: SyncRun) -> None:
    """Notes with no file yet (new in the store) get one."""
    pending_episodes = [uuid.UUID(p.episode_id) for p in run.state.pending.values()]
    waiting = (
        set(
            run.session.scalars(
                select(NoteSource.note_id).where(NoteSource.episode_id.in_(pending_episodes))
            )
        )
        if pending_episodes
        else set()
    )
    mapped = run.state.lineages()
    taken = set(run.files) | set(run.state.files) | {op.name for op in run.plan.ops}
    for lineage, note in sorted(run.current.items(), key=lambda kv: kv[1].created_at):
        if lineage in mapped or note.id in waiting:
            continue
        name = f.file_name(note, taken)
        taken.add(name)
        write_file(run, name, note, None, None)
        run.report.written.append(name)
