"""A sweep's share link in a real headless Chromium on a phone (390 px), with no session: both charts drawn by
Chart.js from the link's own series.json, the page within the screen under the site's CSP, no JavaScript errors,
and no request to the team's pages or the API."""

from __future__ import annotations

import pytest

from jobs.shares import sharing
from tests.browser import assert_fits, wait_until
from tests.sets.sweeps import finished_sweep, sweep_profile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def grid_sweep(disk, broker):
    """QD 1-64 x4 at 4k and 64k on the `disk` fixture (4,000 IOPS, 100 MB/s). The members' ends publish their next
    steps on the test's own broker, where no worker takes them."""
    profile = sweep_profile(disk.team, name="QD × block size", sweep_axes={"block_size_bytes": "4k,64k",
                            "iodepth": "1-64 x4"})  # fmt: skip
    measured = [(900, 120), (2600, 160), (3900, 300), (3950, 1100), (700, 400), (1300, 600), (1500, 1600), (1510, 5200)]
    return finished_sweep(disk, profile, measured)


def test_a_shared_sweep_draws_both_charts_on_a_phone_without_a_session(
    grid_sweep, owner, phone_page, live_server, screenshot
):
    _, token = sharing.create(grid_sweep.team, owner, days=7, run_set=grid_sweep)
    asked: list[str] = []
    phone_page.on("request", lambda request: asked.append(request.url))

    phone_page.goto(f"{live_server.url}/s/{token}/")
    wait_until(phone_page, "window.Chart && Chart.getChart('set-iops-chart') && Chart.getChart('set-latency-chart')")

    iops = phone_page.evaluate("Chart.getChart('set-iops-chart').data.datasets.map((d) => d.label)")
    assert "block size 4k — knee at QD 16" in iops and "theoretical at 64k" in iops
    assert "knee at QD 16: 3,900 IOPS, p99 300 µs" in phone_page.locator("#set-knees").inner_text()
    assert phone_page.locator("#share-banner").is_visible() and phone_page.locator("form").count() == 0
    assert f"{live_server.url}/s/{token}/series.json" in asked
    assert not [url for url in asked if "/api/" in url or f"/sets/{grid_sweep.pk}/" in url]
    assert_fits(phone_page, "phone_page")
    assert phone_page.js_errors == []
    screenshot("shared-sweep", phone_page)
