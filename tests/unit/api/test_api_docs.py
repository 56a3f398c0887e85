"""/docs works offline: Swagger UI's page loads its script and style from this process,
never from a CDN; /redoc (CDN-only) is gone."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from memory.api.app import create_app


def test_the_docs_page_loads_nothing_from_elsewhere() -> None:
    client = TestClient(create_app())  # no lifespan: nothing here touches a server
    page = client.get("/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert loaded and all(url.startswith("/docs/assets/") for url in loaded), loaded
    assert "cdn" not in page.text.lower()
    for url in loaded:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 500, url
    assert client.get("/redoc").status_code == 404
