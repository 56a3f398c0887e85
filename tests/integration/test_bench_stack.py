"""The benchmarks' stack started without its API: nothing answers on its port, while the
database, Redis and the agent token are there for a benchmark that searches in process or
starts its own APIs (an idle API would run its start-up read-ahead beside the measurement).

Run in a child process: the stack points its own process's settings at its database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.stack import ROOT

pytestmark = pytest.mark.integration

PROBE = """
import json, httpx
from sqlalchemy import text
from benchmarks.stack import BenchStack
from memory.db import session_scope

with BenchStack(workers=0, beat=False, api=False) as stack:
    try:
        httpx.get(stack.api_url + "/healthz", timeout=2)
        answered = True
    except httpx.HTTPError:
        answered = False
    with session_scope() as session:
        tokens = session.execute(text("SELECT count(*) FROM api_tokens")).scalar_one()
    print(json.dumps({"processes": sorted(stack.processes), "answered": answered,
                      "token": bool(stack.token), "tokens": tokens}))
"""


def test_a_stack_without_its_api_has_the_rest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"processes": ["redis"], "answered": False, "token": True, "tokens": 1}
