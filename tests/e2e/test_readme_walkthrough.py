"""The README's first capture and recall works when pasted: its shell block runs as written
against a real `muma up` (on a home and port of the test's own) and answers what the
README says it answers."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from memory.runtime.embedded import free_port
from tests.support.up_process import ROOT, read_until, start_up, stop_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

README_URL, README_HOME = "http://127.0.0.1:8787", "~/.local/share/muma"


def walkthrough() -> str:
    """The first shell block under "A first capture and recall"."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A first capture and recall", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README has no walkthrough block"
    return block.group(1)


def test_the_readmes_walkthrough_recalls_what_it_captured(tmp_path: Path) -> None:
    home, port = tmp_path / "muma-home", free_port()
    script = walkthrough().replace(README_URL, f"http://127.0.0.1:{port}")
    script = script.replace(README_HOME, str(home))
    assert README_URL not in script and README_HOME not in script
    process = start_up(home, port, free_port())
    try:
        read_until(process, "Press Ctrl-C to stop.")
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=180, cwd=tmp_path
        )
    finally:
        stop_up(process)
    assert done.returncode == 0, done.stderr
    # As the README says: the search's content, and the context's block.
    assert '"content":"Alice\'s dog is called Biscuit."' in done.stdout, done.stdout
    context = done.stdout[done.stdout.index("<relevant-memories>") :]
    assert "Alice's dog is called Biscuit." in context, done.stdout
