"""Local credentials for the embedded default: one admin and one agent token, 0600."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memory.access.tokens import create_token
from memory.db import session_scope


def ensure_credentials(path: Path, *, tenant_id: str, api_url: str) -> tuple[dict[str, Any], bool]:
    """Create the tokens once; later starts reuse the file. Returns (data, created)."""
    if path.exists():
        data = json.loads(path.read_text())
        if data.get("api_url") != api_url:
            data["api_url"] = api_url
            _write_private(path, data)
        return data, False
    with session_scope() as session:
        _, admin_secret = create_token(
            session=session, role="admin", tenant_id=tenant_id, name="local admin"
        )
        _, agent_secret = create_token(
            session=session, role="agent", tenant_id=tenant_id, name="local agent"
        )
    data = {
        "api_url": api_url,
        "tenant_id": tenant_id,
        "admin_token": admin_secret,
        "agent_token": agent_secret,
    }
    _write_private(path, data)
    return data, True


def _write_private(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
    path.chmod(0o600)
