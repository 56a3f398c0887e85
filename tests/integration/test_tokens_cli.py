"""`muma tokens` through click's runner against the real database and API."""

from __future__ import annotations

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

    listed = runner.invoke(cli, ["tokens", "list", "--tenant", tenant_id])
    assert listed.exit_code == 0 and "viewer" in listed.output
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
