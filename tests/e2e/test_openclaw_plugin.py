"""The plugin inside a real OpenClaw (Node 24 from npm) against the real MUMA stack.

The Node-side test (plugin/test/e2e/openclaw.e2e.test.mjs) drives OpenClaw with a fake
model server; this wrapper starts MUMA's API, worker and Redis as real processes on the
test database and hands their URL and an agent token to it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import make_token
from tests.support.stack import ROOT, Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture()
def stack(tmp_path: Path, database_url: str) -> Iterator[Stack]:
    stack = Stack(tmp_path / "stack", database_url, MUMA_EMBEDDING__THREADS="1")
    stack.start_redis()
    stack.start_api()
    stack.start_worker()
    try:
        yield stack
    finally:
        stack.stop_all()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install OpenClaw")
def test_plugin_in_a_real_openclaw(stack: Stack, tenant_id: str) -> None:
    env = {
        **os.environ,
        "MUMA_E2E_URL": stack.api_url,
        "MUMA_E2E_TOKEN": make_token("agent", tenant_id),
        "MUMA_E2E_DRAIN_S": "180",
    }
    result = subprocess.run(
        ["bash", str(ROOT / "plugin" / "scripts" / "test.sh"), "--e2e-only"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    output = result.stdout[-6000:] + result.stderr[-6000:]
    assert result.returncode == 0, output
    assert "MODE: real" in output or "[real]" in output, output
    # The scenarios that need the real service (working memory, the spool's episodes
    # searchable): they ran, not skipped.
    # (node's spec reporter: "✔ <name> (<ms>)" for a pass, "﹣ <name> ... # SKIP" if skipped)
    for name in (
        "another tool's result",
        "a compaction and a reset in the gateway promote",
        "agent --local keeps turns captured while the service is down",
    ):
        [ran] = re.findall(rf"^✔ \[real\] {re.escape(name)}.*$", result.stdout, re.M)
        assert "SKIP" not in ran, ran
