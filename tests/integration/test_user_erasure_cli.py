"""`muma users erase|erasures` and `muma tenants erase` through click's runner: asked for
confirmation, run in process with a report, or left to the worker; bad input exits 2 and
erases nothing."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner, Result

from memory.cli.main import cli
from memory.db import session_scope
from memory.erasure.users import get_erasure
from tests.integration.test_user_erasure_support import bulk_user, counts, marker
from tests.support.helpers import wait_until

pytestmark = pytest.mark.integration


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_users_erase_asks_runs_and_reports(
    database_url: str, redis_url: str, tenant_id: str
) -> None:
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    bulk_user(tenant_id, alice, 30, marker("cl"))
    found = counts(tenant_id, alice)

    declined = run("users", "erase", "--user", alice, "--tenant", tenant_id, input="n\n")
    assert declined.exit_code != 0 and counts(tenant_id, alice) == found

    unknown = run("users", "erase", "--user", "nobody-here", "--tenant", tenant_id, "--yes")
    assert unknown.exit_code == 2 and "unknown user" in unknown.output

    done = run("users", "erase", "--user", alice, "--tenant", tenant_id, "--yes",
               "--batch-size", "7", "--reason", "asked")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "notes" in done.output and "done" in done.output
    assert not any(counts(tenant_id, alice).values())

    listed = run("users", "erasures", "--tenant", tenant_id, "--json")
    assert listed.exit_code == 0, listed.output
    [record] = json.loads(listed.output)
    assert record["user_id"] == alice and record["reason"] == "asked"
    shown = run("users", "erasures", "--id", record["erasure_id"], "--json")
    report = json.loads(shown.output)["report"]
    assert {t: n for t, n in report["removed"].items() if t in found} == found
    assert run("users", "erasures", "--id", "not-an-id").exit_code == 2


def test_tenants_erase_needs_the_tenant_named_again(
    database_url: str, redis_url: str, celery_worker: str, tenant_id: str
) -> None:
    bulk_user(tenant_id, "someone", 5, marker("tn"))
    wrong = run("tenants", "erase", "--tenant", tenant_id, "--confirm", "another")
    assert wrong.exit_code == 2 and "--confirm" in wrong.output
    prompted = run("tenants", "erase", "--tenant", tenant_id, input="nope\n")
    assert prompted.exit_code == 2
    assert counts(tenant_id, None)["notes"] == 5

    queued = run("tenants", "erase", "--tenant", tenant_id, "--confirm", tenant_id, "--background")
    assert queued.exit_code == 0, queued.output
    erasure_id = uuid.UUID(queued.output.split()[1])

    def done() -> bool:
        with session_scope() as session:
            return get_erasure(session=session, erasure_id=erasure_id).status == "done"

    wait_until(done, timeout=120, interval=0.2)
    assert counts(tenant_id, None)["notes"] == 0
