"""`muma up` on a port another service holds says so and exits, before it starts anything
(it used to advertise the other service's URL and restart its API forever)."""

from __future__ import annotations

import socket
from pathlib import Path

from memory.config import load_settings
from memory.runtime.embedded import free_port, port_is_free
from memory.runtime.up import UpOptions, run_up


def test_a_taken_api_port_is_named_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        assert not port_is_free("127.0.0.1", taken)
        said: list[str] = []
        options = UpOptions(host="127.0.0.1", port=taken, flower_port=free_port())
        assert run_up(load_settings(home=tmp_path), options, said.append) == 1
    assert said[0] == f"port in use on 127.0.0.1: --port {taken}; another service holds it"
    assert "--port 8788" in said[1]
    assert not (tmp_path / "pg").exists() and not (tmp_path / "runtime.json").exists()
    assert port_is_free("127.0.0.1", taken)  # released: free again
