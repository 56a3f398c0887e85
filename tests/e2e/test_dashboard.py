"""The dashboard in a real browser against real processes (Redis, API, worker).

A viewer signs in, searches as an agent and sees explanations and the exact injection
block; an operator archives and restores a memory; a viewer sees no such control and the
server refuses the call anyway; every page renders without errors (screenshots).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import chromium, chromium_path, screenshot_dir
from tests.support.dashboard_seed import Seeded, seed_memory
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
VIEWPORT = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Iterator[Stack]:
    chromium_path()  # skip (or fail under CI) before starting anything
    stack = Stack(tmp_path_factory.mktemp("dashboard") / "stack", database_url,
                  MUMA_EMBEDDING__THREADS="1", MUMA_ACTIVATION__NOISE_ENABLED="false")  # fmt: skip
    stack.start_redis()
    stack.start_api()
    stack.start_worker()
    try:
        yield stack
    finally:
        stack.stop_all()


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> Seeded:
    return seed_memory(stack.api_url)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, stack: Stack) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium")) as browser:
        yield browser


def sign_in(browser: Any, stack: Stack, token: str, user_id: str | None) -> Any:
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{stack.api_url}/dashboard")
    page.fill("#token-input", token)
    page.click("#sign-in")
    page.wait_for_selector("#role-badge")
    if user_id:
        page.fill("#user-input", user_id)
        page.dispatch_event("#user-input", "change")
        page.wait_for_selector("[data-note-id]")
    return page


def api(stack: Stack, token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{stack.api_url}{path}", timeout=30,
                         headers={"Authorization": f"Bearer {token}"}, **kwargs)  # fmt: skip


def test_viewer_searches_and_sees_explanations_and_injection_block(
    browser: Any, stack: Stack, seeded: Seeded
) -> None:
    page = sign_in(browser, stack, seeded.tokens["viewer"], seeded.user_id)
    assert page.inner_text("#role-badge") == "viewer"
    page.click("#nav-search")
    page.fill("#search-query", "Where does Mira like to travel?")
    page.select_option("#search-agent", "travel-agent")
    page.click("#search-submit")
    page.wait_for_selector("#context-block")
    results = page.locator("#search-results .result")
    assert results.count() >= 2
    first = results.first.inner_text()
    for label in ("Route ranks", "Relevance", "Base level B", "Spreading S", "Noise ε",
                  "Retention R"):  # fmt: skip
        assert label in first, label
    shown_ids = [results.nth(i).get_attribute("data-note-id") for i in range(results.count())]
    assert seeded.notes["doctor"] not in shown_ids  # user-only: never for an agent
    assert seeded.notes["savings"] not in shown_ids  # banker's private note
    expected = api(stack, seeded.tokens["viewer"], "POST", "/v1/context", json={
        "user_id": seeded.user_id, "agent_id": "travel-agent", "dry_run": True,
        "prompt": "Where does Mira like to travel?", "max_tokens": 1000, "timeout_ms": 5000,
    }).json()  # fmt: skip
    block = page.inner_text("#context-block")
    assert block.startswith("<relevant-memories>") and block == expected["context"]
    assert page.inner_text("#context-tokens") == f"{expected['tokens']} tokens"
    assert "Dolomites" in block


def test_viewer_has_no_archive_control_and_the_server_refuses(
    browser: Any, stack: Stack, seeded: Seeded
) -> None:
    page = sign_in(browser, stack, seeded.tokens["viewer"], seeded.user_id)
    note = seeded.notes["seat"]
    page.goto(f"{stack.api_url}/dashboard#/note/{note}")
    page.wait_for_selector("#note-status")
    assert page.locator("#archive-button").count() == 0
    status = page.evaluate(
        """async ([id, user]) => (await fetch(`/v1/memories/${id}/archive?user_id=${user}`, {
            method: "POST",
            headers: {Authorization: `Bearer ${sessionStorage.getItem("muma.token")}`},
        })).status""",
        [note, seeded.user_id],
    )
    assert status == 403
    current = api(stack, seeded.tokens["viewer"], "GET", f"/v1/memories/{note}",
                  params={"user_id": seeded.user_id}).json()  # fmt: skip
    assert current["status"] == "active"


def test_operator_archives_and_restores_a_memory(
    browser: Any, stack: Stack, seeded: Seeded
) -> None:
    page = sign_in(browser, stack, seeded.tokens["operator"], seeded.user_id)
    note = seeded.notes["veg"]
    page.goto(f"{stack.api_url}/dashboard#/note/{note}")
    page.click("#archive-button")
    page.wait_for_selector("#restore-button")
    assert page.inner_text("#note-status") == "archived"
    stored = api(stack, seeded.tokens["viewer"], "GET", f"/v1/memories/{note}",
                 params={"user_id": seeded.user_id}).json()  # fmt: skip
    assert stored["status"] == "archived"
    page.click("#restore-button")
    page.wait_for_selector("#archive-button")
    assert page.inner_text("#note-status") == "active"
    stored = api(stack, seeded.tokens["viewer"], "GET", f"/v1/memories/{note}",
                 params={"user_id": seeded.user_id}).json()  # fmt: skip
    assert stored["status"] == "active"


PAGES = [
    ("memories", "#/memories", "[data-note-id]"),
    ("note", "#/note/{lisbon}", "#note-status"),
    ("search", "#/search", "#context-block"),
    ("graph", "#/graph/{knee}", "#graph-svg"),
    ("pipeline", "#/pipeline", "[data-retry]"),
    ("conflicts", "#/conflicts", "[data-conflict-id]"),
    ("stats", "#/stats", "svg.chart"),
    ("agents", "#/agents", "table.grid"),
    ("tokens", "#/tokens", "#new-token-secret"),
]


def _prepare(page: Any, name: str) -> None:
    if name == "search":
        page.fill("#search-query", "Where does Mira like to travel?")
        page.select_option("#search-agent", "travel-agent")
        page.click("#search-submit")
    elif name == "tokens":
        page.fill("#token-form input[name=name]", "grafana")
        page.click("#create-token")


def _wait(page: Any, selector: str, name: str) -> None:
    try:
        page.wait_for_selector(selector, timeout=20_000)
    except Exception as exc:
        shown = page.inner_text("#page")
        raise AssertionError(f"{name}: {selector} never showed; page: {shown}") from exc


def test_every_page_renders_without_errors(
    browser: Any, stack: Stack, seeded: Seeded, tmp_path: Path
) -> None:
    shots = screenshot_dir(tmp_path)
    errors: list[str] = []
    page = browser.new_page(viewport=VIEWPORT)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{stack.api_url}/dashboard")
    page.wait_for_selector("#token-input")
    page.screenshot(path=str(shots / "sign-in.png"))
    page.fill("#token-input", seeded.tokens["admin"])
    page.click("#sign-in")
    page.wait_for_selector("#role-badge")
    page.fill("#user-input", seeded.user_id)
    page.dispatch_event("#user-input", "change")
    for name, route, ready in PAGES:
        page.goto(f"{stack.api_url}/dashboard{route.format(**seeded.notes)}")
        _prepare(page, name)
        _wait(page, ready, name)
        assert page.locator(".notice.error").count() == 0, (name, page.inner_text("#page"))
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    assert errors == []
