"""`muma tokens` through click's runner against the real database and API."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from memory.cli.main import cli

pytestmark = pytest.mark.integration


def test_create_list_revoke(api_client: TestClient, tenant_id: str) -> None:
    runner = CliRunner()
    created = runner.invoke(cli, ["tokens", "create", "--role", "viewer", "--tenant", tenant_id])
    assert created.exit_code == 0, created.output
    secret = created.output.strip().splitlines()[-1]
    assert secret.startswith("muma_")
    headers = {"Authorization": f"Bearer {secret}"}
    assert api_client.get("/v1/system/status", headers=headers).status_code == 200

    listed = runner.invoke(cli, ["tokens", "list", "--tenant", tenant_id, "--json"])
    assert listed.exit_code == 0 and json.loads(listed.output)["role"] == "viewer"
    assert secret not in listed.output

    token_id = created.output.split("token ")[1].split()[0]
    revoked = runner.invoke(cli, ["tokens", "revoke", token_id])
    assert revoked.exit_code == 0, revoked.output
    assert api_client.get("/v1/system/status", headers=headers).status_code == 401


def test_bad_role_is_a_clear_error(database_url: str) -> None:
    result = CliRunner().invoke(cli, ["tokens", "create", "--role", "root"])
    assert result.exit_code != 0
    assert "root" in result.output


def test_revoke_unknown_token_fails_cleanly(database_url: str) -> None:
    result = CliRunner().invoke(cli, ["tokens", "revoke", "00000000-0000-0000-0000-000000000000"])
    assert result.exit_code != 0


def test_list_shows_whole_ids_and_json_and_revoke_takes_either_shown_form(
    database_url: str, tenant_id: str
) -> None:
    """The table never cuts an id, even 80 columns wide, and the prefix is revoked as shown
    (with its ellipsis); `--json` gives one object per token."""
    runner = CliRunner()
    for name in ("first", "second"):
        made = runner.invoke(cli, ["tokens", "create", "--role", "agent", "--tenant", tenant_id,
                                   "--name", f"a token with a long name, {name}"])  # fmt: skip
        assert made.exit_code == 0, made.output
    listed = runner.invoke(cli, ["tokens", "list", "--tenant", tenant_id], env={"COLUMNS": "80"})
    records = [
        json.loads(line)
        for line in runner.invoke(cli, ["tokens", "list", "--tenant", tenant_id, "--json"])
        .output.strip()
        .splitlines()
    ]
    assert len(records) == 2 and all(r["tenant_id"] == tenant_id for r in records)
    assert all(r["id"] in listed.output for r in records), listed.output
    first, second = records
    assert runner.invoke(cli, ["tokens", "revoke", first["id"]]).exit_code == 0
    by_prefix = runner.invoke(cli, ["tokens", "revoke", second["prefix"] + "…"])
    assert by_prefix.exit_code == 0, by_prefix.output
    again = runner.invoke(cli, ["tokens", "list", "--tenant", tenant_id, "--json"]).output
    assert all(json.loads(line)["revoked_at"] for line in again.strip().splitlines())
