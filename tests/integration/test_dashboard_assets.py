"""The dashboard is served by the API, self-contained (no CDN) and locked down by its CSP;
the page holds no data: the session call needs a token like every data call."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.helpers import bearer

pytestmark = pytest.mark.integration
ASSETS = Path(__file__).resolve().parents[2] / "memory" / "api" / "dashboard"


def test_page_and_every_asset_are_served_with_a_strict_policy(api_client: TestClient) -> None:
    page = api_client.get("/dashboard")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    names = sorted(p.name for p in ASSETS.iterdir() if p.suffix in (".js", ".css", ".svg"))
    assert {"app.js", "api.js", "style.css"} <= set(names)
    for name in names:
        response = api_client.get(f"/dashboard/{name}")
        assert response.status_code == 200, name
        assert response.headers["x-content-type-options"] == "nosniff"
        text = response.text
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), name  # offline
        assert "innerHTML" not in text and "eval(" not in text, name
    for imported in re.findall(r'from "\./([a-z0-9-]+\.js)"', (ASSETS / "app.js").read_text()):
        assert imported in names


@pytest.mark.parametrize(
    "path", ["/dashboard/..%2Fapp.py", "/dashboard/missing.js", "/dashboard/App.JS"]
)
def test_only_dashboard_files_are_served(api_client: TestClient, path: str) -> None:
    assert api_client.get(path).status_code == 404


def test_session_needs_a_token_and_reports_role_and_features(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str
) -> None:
    assert api_client.get("/v1/dashboard/session").status_code == 401
    body = api_client.get("/v1/dashboard/session", headers=bearer(tokens["operator"])).json()
    assert body["role"] == "operator" and body["tenant_id"] == tenant_id
    features = body["features"]
    assert features["search"] and features["browse"] and features["metrics"]
    assert features["tokens"] and features["graph"] and features["resolve_conflicts"]
    assert features["journal"] and features["candidates"]
