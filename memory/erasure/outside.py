"""What forgetting a memory removes outside the database, after its transaction commits:
the user's working-memory items that held the forgotten text (Redis), and the note files
of filesystem sync.

Invariants: only the forgetting user's keys and directory are read; an item is removed
when its text is one of the forgotten turns' (the content hash working memory keys items
by) or holds one of the forgotten notes' texts; a sync directory another sync holds is
left to that sync, which removes the files of notes gone from the store.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import redis

from memory.config import Settings
from memory.erasure.forget import ForgetReport
from memory.errors import ConflictError, InvalidInputError
from memory.sync.files import (
    STATE_FILE,
    conflict_name,
    load_state,
    sync_lock,
    user_directory,
    write_atomic,
)
from memory.working.service import WorkingItem, content_hash, session_key

log = logging.getLogger(__name__)


def purge_outside(
    report: ForgetReport, *, client: redis.Redis | None, settings: Settings
) -> dict[str, int]:
    """Remove the forgotten text from working memory and synced files; counts removed."""
    removed = {"working_items": 0, "files": 0}
    if client is not None and report.texts:
        try:
            removed["working_items"] = _purge_working(client, report)
        except redis.RedisError as exc:  # the items expire with their session's TTL
            log.warning("working memory not purged after a forget: %s", exc)
    if settings.sync.enabled and report.lineage_ids:
        removed["files"] = _purge_files(settings.sync_dir, report)
    return removed


def _purge_working(client: redis.Redis, report: ForgetReport) -> int:
    hashes = {content_hash(t) for t in report.texts if t}
    texts = [" ".join(t.split()).casefold() for t in report.texts if t.strip()]
    # The user's session keys: the key's prefix (glob characters escaped) and any session.
    prefix = session_key(report.tenant_id, report.user_id, "")
    pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
    removed = 0
    for key in client.scan_iter(match=pattern, count=200):
        for field, raw in client.hgetall(key).items():
            item = WorkingItem.from_json(raw)
            text = " ".join(item.content.split()).casefold()
            if content_hash(item.content) in hashes or any(t in text for t in texts):
                removed += int(client.hdel(key, field))
    return removed


def _purge_files(root: Path, report: ForgetReport) -> int:
    try:
        directory = user_directory(root, report.user_id)
    except InvalidInputError:
        return 0
    if not (directory / STATE_FILE).exists():
        return 0
    lineages = {str(i) for i in report.lineage_ids}
    try:
        with sync_lock(directory):
            state = load_state(directory, report.tenant_id, report.user_id)
            gone = [name for name, e in state.files.items() if e.lineage_id in lineages]
            for name in gone:
                for path in (directory / name, directory / conflict_name(name)):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                del state.files[name]
            if gone:
                write_atomic(directory / STATE_FILE, state.to_json())
            return len(gone)
    except (ConflictError, InvalidInputError) as exc:
        log.warning("synced files left to the next sync after a forget: %s", exc)
        return 0
