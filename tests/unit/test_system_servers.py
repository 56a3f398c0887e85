"""/v1/system/status says embedded or external truthfully: under `muma up` the service's
processes get the embedded servers' URLs as if they were external."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory.api.routes.system import servers
from memory.config import load_settings

DB = "postgresql://postgres@/muma?host=/tmp/home/pg"
REDIS = "redis://127.0.0.1:6400/0"


def _runtime(home: Path, **servers_run: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "database_url": DB, "redis_url": REDIS, **servers_run}
    (home / "runtime.json").write_text(json.dumps(record))


def test_the_urls_muma_up_gave_its_embedded_servers_are_embedded(tmp_path: Path) -> None:
    _runtime(tmp_path, database="embedded", redis="embedded")
    settings = load_settings(home=tmp_path, database_url=DB, redis_url=REDIS)
    assert servers(settings) == {"database": "embedded", "redis": "embedded"}


def test_other_urls_are_external_and_none_is_embedded(tmp_path: Path) -> None:
    _runtime(tmp_path, database="embedded", redis="external")
    other = load_settings(home=tmp_path, database_url=DB + "x", redis_url=REDIS)
    assert servers(other) == {"database": "external", "redis": "external"}
    unset = load_settings(home=tmp_path / "none", database_url=None, redis_url=None)
    assert servers(unset) == {
        "database": "embedded",
        "redis": "embedded",
    }
