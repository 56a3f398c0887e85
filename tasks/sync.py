"""Filesystem sync: one run per user (also what `muma sync` calls), and the beat fan-out.

Order of one run: take the user directory's lock, apply file changes to the store and
plan the file writes in one transaction, commit, write the files, then enqueue the new
files' episodes and the relinking of new versions (follow-ups only after the commit).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memory.clients.embedder import get_embedder
from memory.config import Settings, get_settings
from memory.db import session_scope
from memory.errors import ConflictError
from memory.ops.users import require_known_user
from memory.sync.files import STATE_FILE, sync_lock, user_directory
from memory.sync.plan import SyncReport, apply_plan
from memory.sync.service import plan_sync
from tasks.app import app
from tasks.base import DbTask
from tasks.pipeline import enqueue_episodes

log = logging.getLogger(__name__)


def run_user_sync(
    *,
    tenant_id: str,
    user_id: str,
    root: Path | None = None,
    settings: Settings | None = None,
) -> SyncReport:
    """Sync `root/<user>` (default sync.dir) with the user's notes, both ways."""
    settings = settings or get_settings()
    directory = user_directory(root or settings.sync_dir, user_id)
    if not directory.exists():
        # A typo must not create a directory; a person may create one to start writing.
        with session_scope() as session:
            require_known_user(session=session, tenant_id=tenant_id, user_id=user_id)
    with sync_lock(directory):
        with session_scope() as session:
            plan = plan_sync(
                session=session,
                directory=directory,
                tenant_id=tenant_id,
                user_id=user_id,
                settings=settings,
                embedder=get_embedder(settings),
            )
        report = apply_plan(plan)
    if plan.episode_ids:
        enqueue_episodes(plan.episode_ids)
    if plan.relink_ids:
        _relink(plan.relink_ids)
    return report


def _relink(note_ids: list[uuid.UUID]) -> None:
    """Link edited versions to similar notes (best effort: they are stored either way)."""
    from tasks.pipeline import link

    try:
        link.apply_async(([str(i) for i in note_ids],), retry=False)
    except Exception as exc:  # kombu raises several unrelated types for a dead broker
        log.warning("could not enqueue linking of %d notes: %s", len(note_ids), exc)


def synced_users(root: Path) -> list[tuple[str, str]]:
    """(tenant, user) of every directory under `root` that has been synced before."""
    found = []
    for state_path in sorted(root.glob(f"*/{STATE_FILE}")):
        try:
            data = json.loads(state_path.read_text(encoding="utf-8"))
            found.append((str(data["tenant_id"]), str(data["user_id"])))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("skipping %s: %s", state_path, exc)
    return found


@app.task(base=DbTask, bind=True, name="tasks.sync.sync_user")
def sync_user(self: DbTask, tenant_id: str, user_id: str) -> dict[str, Any]:
    try:
        report = run_user_sync(tenant_id=tenant_id, user_id=user_id)
    except ConflictError as exc:  # another run holds the directory: it does the work
        log.info("sync of %s skipped: %s", user_id, exc.message)
        return {"skipped": exc.message}
    return asdict(report)


@app.task(base=DbTask, bind=True, name="tasks.sync.sync_all_users")
def sync_all_users(self: DbTask) -> int:
    """Beat's fan-out: one sync_user task per synced user directory."""
    root = get_settings().sync_dir
    users = synced_users(root) if root.is_dir() else []
    for tenant_id, user_id in users:
        sync_user.apply_async((tenant_id, user_id))
    return len(users)
