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


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Log in on the login page as a person does (base_url: the live server's or a stack's), and wait for the start
    page it leads to."""
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/")


# Controls a person types into or picks from; buttons name themselves by their text.
UNLABELLED_CONTROLS = """() => {
  const named = (el) => {
    if ((el.getAttribute("aria-label") || "").trim()) return true;
    const ids = (el.getAttribute("aria-labelledby") || "").split(/\\s+/).filter(Boolean);
    if (ids.some((id) => (document.getElementById(id)?.textContent || "").trim())) return true;
    return [...(el.labels || [])].some((label) => label.textContent.trim());
  };
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  return [...document.querySelectorAll("input, select, textarea")]
    .filter((el) => !["hidden", "submit", "button", "reset"].includes(el.type) && shown(el) && !named(el))
    .map((el) => el.outerHTML.slice(0, 120));
}"""

# What reaches past the screen's edges. Only tables and preformatted text may be wider than the screen, and
# only inside a box that scrolls: a card's text, forms and figures must fit.

# Elements past the screen's right edge (tables, pre and .table-scroll may scroll instead).
STICKING_OUT = """() => {
  const mayScroll = (el) => el.closest("table, pre, .table-scroll");
  const scrolls = (el) => {
    for (let up = el.parentElement; up; up = up.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(up).overflowX)) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (!box.width || (box.right <= document.documentElement.clientWidth + 1 && box.left >= -1)) continue;
    if (el.closest(".visually-hidden") || (mayScroll(el) && scrolls(el))) continue;
    out.push(`${el.tagName.toLowerCase()}#${el.id}.${el.className} ${Math.round(box.left)}..${Math.round(box.right)}`);
  }
  return out.slice(0, 8);
}"""


def settle(page) -> None:
    """Wait until the page's charts are drawn (or say why not), so the layout measured is the final one."""
    page.wait_for_load_state("load")
    if page.locator("#disk-charts").count():
        wait_until(
            page, "!document.getElementById('chart-drawn').hidden || !document.getElementById('chart-empty').hidden"
        )
    if page.locator("#run-chart-status").count():
        wait_until(page, "!['', 'Loading…'].includes(document.getElementById('run-chart-status').textContent)")
    if page.locator("#compare-chart").count():
        wait_until(page, "window.Chart && Chart.getChart('compare-chart')")


def assert_fits(page, name: str) -> None:
    """Nothing of the page reaches past the screen's edge (checked at phone and desktop width)."""
    # A phone's browser zooms out to show a page wider than the screen, and window.innerWidth grows with it;
    # the layout width (the viewport meta tag's device-width) is the screen's own.
    screen = page.evaluate("document.documentElement.clientWidth")
    assert screen <= page.viewport_size["width"]
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= screen, f"{name}: the page is {width}px wide on a {screen}px screen: {page.evaluate(STICKING_OUT)}"
    outside = page.evaluate(STICKING_OUT)
    assert not outside, f"{name}: past the screen's edge: {outside}"
