"""A real headless Chromium (Debian's) driven by Playwright, for page tests. Load from conftest with *."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

__all__ = ["browser", "page", "phone_page", "screenshot"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        reason = "Chromium is not installed (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; Django must still allow its ORM here.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"],
        )  # fmt: skip
        yield chromium
        chromium.close()


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


def _open(browser, options: dict) -> Iterator[object]:
    context = browser.new_context(**options)
    context.set_default_timeout(15000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.js_errors = errors
    yield page
    context.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    yield from _open(browser, DESKTOP)


@pytest.fixture
def phone_page(browser) -> Iterator[object]:
    """A 390 x 844 touch screen that honours the page's viewport meta tag, as a phone's browser does."""
    yield from _open(browser, PHONE)


@pytest.fixture
def screenshot(request):
    """take(name) saves the test's page (or the page given) under tests/artifacts/<database vendor>/, for a person
    to look at; a folder per database, as ./bw test runs the same tests on SQLite and PostgreSQL at once."""
    folder = ARTIFACTS / connection.vendor
    folder.mkdir(parents=True, exist_ok=True)

    def take(name: str, on: object = None) -> Path:
        target = on or request.getfixturevalue("page")
        path = folder / f"{request.node.name}-{name}.png"
        target.screenshot(path=str(path), full_page=True)
        return path

    return take


def wait_until(page: Any, expression: str, timeout_s: float = 30) -> None:
    """Poll a JavaScript expression until it is true. page.wait_for_function would poll with eval(), which
    benchweb's Content-Security-Policy refuses; page.evaluate goes through the DevTools protocol, which the
    policy does not govern."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"Boolean({expression})"):
        if time.monotonic() > deadline:
            shown = page.evaluate("(document.querySelector('main') || document.body).innerText.slice(0, 600)")
            raise AssertionError(f"still not true after {timeout_s} s: {expression}\nThe page says: {shown}")
        page.wait_for_timeout(100)
