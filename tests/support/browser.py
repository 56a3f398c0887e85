"""Headless Debian chromium driven by Playwright (which cannot download a browser here).

`make test` installs chromium first; elsewhere the browser tests skip when it is missing,
except under CI, where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = "Debian chromium is not installed (make test installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError("unreachable")


@contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """Headless chromium. Playwright gives each launch a fresh temporary user-data-dir and
    HOME points at `profile`, so nothing is shared with another run or the machine's user."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    profile.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=[*CHROMIUM_ARGS, f"--disk-cache-dir={profile / 'cache'}"],
            env={**os.environ, "HOME": str(profile)},
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot_dir(tmp: Path) -> Path:
    """docs/screenshots when MUMA_SCREENSHOTS=1 (refreshing the README), else a temp dir."""
    target = SCREENSHOTS if os.environ.get("MUMA_SCREENSHOTS") == "1" else tmp / "screenshots"
    target.mkdir(parents=True, exist_ok=True)
    return target
