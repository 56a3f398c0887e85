"""What erasing a user or a tenant removes outside the database: the Redis keys and members
the catalog lists (`REDIS_USER_KEYS`, `REDIS_USER_MEMBERS`) and the synced directory
(`SYNCED_DIRECTORY`).

Invariants: idempotent (a second run finds nothing and removes nothing); only keys whose
escaped components name the tenant (and user) are touched; a sync directory is removed
only when its state file names the tenant (directories are per user id, shared by
tenants), and only under the sync's own lock, so no sync writes into it meanwhile (a
ConflictError when a sync holds it: the caller tries again). The event stream is Redis
pub/sub: nothing of it is stored.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import redis

from memory.erasure.catalog import REDIS_USER_KEYS, REDIS_USER_MEMBERS, SYNCED_DIRECTORY
from memory.errors import ConflictError, InvalidInputError, TransientError
from memory.sync.files import STATE_FILE, sync_lock, user_directory
from memory.working.service import session_key

# The read-ahead's members are "tenant NUL user" (memory.retrieval.recent_users).
MEMBER_SEPARATOR = "\x00"
GLOB_SPECIALS = "*?[]\\"


@dataclass(frozen=True)
class Removed:
    redis_keys: int = 0
    redis_members: int = 0
    files: int = 0
    busy: tuple[str, ...] = ()  # synced directories a running sync holds: left for now

    def counts(self) -> dict[str, int]:
        return {
            "redis_keys": self.redis_keys,
            "redis_members": self.redis_members,
            "files": self.files,
        }


def remove_outside(
    *, client: redis.Redis, sync_root: Path, tenant_id: str, user_id: str | None
) -> Removed:
    """Remove the user's (user_id None: every user's of the tenant) keys and files."""
    try:
        keys = _remove_keys(client, tenant_id, user_id)
        members = _remove_members(client, tenant_id, user_id)
    except redis.RedisError as exc:
        raise TransientError(f"Redis unavailable while erasing: {exc}") from exc
    files, busy = _remove_directories(sync_root, tenant_id, user_id)
    return Removed(keys, members, files, busy)


def _glob(text: str) -> str:
    return "".join("\\" + c if c in GLOB_SPECIALS else c for c in text)


def _escaped(tenant_id: str, user_id: str) -> tuple[str, str]:
    """Tenant and user as working memory's keys hold them (':' and '%' escaped, so the
    key's last three ':'-separated parts are tenant, user and session)."""
    parts = session_key(tenant_id, user_id, "").split(":")
    return parts[-3], parts[-2]


def _key_patterns(tenant_id: str, user_id: str | None) -> list[str]:
    """Each catalog pattern, filled with escaped components, as a SCAN glob."""
    tenant, user = _escaped(tenant_id, user_id or "")
    patterns = []
    for pattern in REDIS_USER_KEYS:
        if user_id is None:  # every user of the tenant: the pattern up to the user
            prefix = pattern.partition("{user}")[0].format(tenant=tenant)
        else:
            prefix = pattern.format(tenant=tenant, user=user).removesuffix("*")
        patterns.append(_glob(prefix) + "*")
    return patterns


def _remove_keys(client: redis.Redis, tenant_id: str, user_id: str | None) -> int:
    removed = 0
    for pattern in _key_patterns(tenant_id, user_id):
        for key in client.scan_iter(match=pattern, count=500):
            removed += int(client.delete(key))
    return removed


def _remove_members(client: redis.Redis, tenant_id: str, user_id: str | None) -> int:
    removed = 0
    for key in REDIS_USER_MEMBERS:
        if user_id is not None:
            removed += int(client.zrem(key, f"{tenant_id}{MEMBER_SEPARATOR}{user_id}"))
            continue
        prefix = f"{tenant_id}{MEMBER_SEPARATOR}"
        for member, _ in client.zscan_iter(key, match=_glob(prefix) + "*", count=500):
            text = member.decode() if isinstance(member, bytes) else str(member)
            if text.startswith(prefix):
                removed += int(client.zrem(key, member))
    return removed


def _remove_directories(
    root: Path, tenant_id: str, user_id: str | None
) -> tuple[int, tuple[str, ...]]:
    """Files removed, and the directories a running sync holds."""
    if not root.is_dir():
        return 0, ()
    if user_id is None:
        directories = [d for d in sorted(root.iterdir()) if d.is_dir()]
    else:
        try:
            user_directory(root, user_id)  # refuses ids that are no single path component
        except InvalidInputError:
            return 0, ()
        directories = [Path(SYNCED_DIRECTORY.format(sync_dir=root, user=user_id))]
    files, busy = 0, []
    for directory in directories:
        try:
            files += _remove_directory(directory, tenant_id)
        except ConflictError:
            busy.append(str(directory))
    return files, tuple(busy)


def _synced_for(directory: Path, tenant_id: str) -> bool:
    """Whether the directory's state file names the tenant (unreadable: not ours to judge)."""
    try:
        data = json.loads((directory / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("tenant_id") == tenant_id


def _remove_directory(directory: Path, tenant_id: str) -> int:
    """Remove a synced directory of the tenant whole; the number of files it held."""
    if not directory.is_dir() or not _synced_for(directory, tenant_id):
        return 0
    with sync_lock(directory):
        if not _synced_for(directory, tenant_id):  # a sync finished in between
            return 0
        files = sum(1 for path in directory.rglob("*") if path.is_file())
        shutil.rmtree(directory)
    return files
