"""A sweep's page in a real Chromium, on a phone (390 px) and a desktop (1280 px): both charts drawn by Chart.js,
the page within the screen, every control labelled, no JavaScript errors."""

from __future__ import annotations

import pytest

from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in, settle, wait_until
from tests.factories import DiskFactory
from tests.sets.sweeps import finished_sweep, sweep_profile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def grid_sweep(disk, broker):
    """QD 1-64 x4 at 4k and 64k on the `disk` fixture (4,000 IOPS, 100 MB/s: 1,525 IOPS at 64k). The members'
    ends publish their next steps on the test's own broker, where no worker takes them."""
    profile = sweep_profile(disk.team, name="QD × block size", sweep_axes={"block_size_bytes": "4k,64k",
                            "iodepth": "1-64 x4"})  # fmt: skip
    measured = [(900, 120), (2600, 160), (3900, 300), (3950, 1100), (700, 400), (1300, 600), (1500, 1600), (1510, 5200)]
    return finished_sweep(disk, profile, measured)


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_sweep_page_draws_its_two_charts_on_a_phone_and_a_desktop(
    request, screen, grid_sweep, owner, live_server, screenshot
):
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/sets/{grid_sweep.pk}/")
    wait_until(page, "window.Chart && Chart.getChart('set-iops-chart') && Chart.getChart('set-latency-chart')")

    assert page.locator("canvas#set-iops-chart").is_visible() and page.locator("canvas#set-latency-chart").is_visible()
    iops = page.evaluate("Chart.getChart('set-iops-chart').data.datasets.map((d) => d.label)")
    assert "block size 4k — IOPS" in iops and "block size 64k — IOPS" in iops
    assert any(label == "block size 4k — knee at QD 16" for label in iops)
    assert "theoretical at 4k" in iops and "theoretical at 64k" in iops
    latency = page.evaluate("Chart.getChart('set-latency-chart').data.datasets.map((d) => d.label)")
    assert {f"block size 4k — {p}" for p in ("p50", "p99", "p99.9")} | {"block size 64k — p99"} <= set(latency)
    assert "knee at QD 16: 3,900 IOPS, p99 300 µs" in page.locator("#set-knees").inner_text()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("sweep", page)


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_pages_around_a_sweep_fit_a_phone_and_a_desktop(
    request, screen, grid_sweep, disk, owner, live_server, screenshot
):
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")
    member = grid_sweep.members.get(set_index=2)
    profile = grid_sweep.profile

    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    settle(page)
    assert f"Sweep {grid_sweep.pk}" in page.locator("#disk-sweeps").inner_text()
    page.locator("#run-now-sweeps summary").click()
    assert "8 points × 5 s = 40 s" in page.locator("#run-now-sweeps").inner_text()
    _looks_right(page, "disk page")
    screenshot("disk", page)

    page.goto(f"{live_server.url}/runs/{member.pk}/")
    settle(page)
    assert page.locator("#run-set").inner_text() == f"point 3 of 8 of sweep {grid_sweep.pk}"
    _looks_right(page, "member run page")

    page.goto(f"{live_server.url}/profiles/{profile.pk}/edit/")
    # PostgreSQL's jsonb keeps the keys of the stored axes in an order of its own: the row of iodepth is looked for.
    row = 1 if page.get_by_label("Axis 1: field").input_value() == "iodepth" else 2
    page.get_by_label(f"Axis {row}: values").fill("1-256 x4")
    wait_until(page, "document.getElementById('sweep-plan').textContent.includes('10 points')")
    assert "iodepth 1-256 x4" in page.locator("#sweep-plan").inner_text()
    assert page.locator("#sweep-plan").inner_text().endswith(": 10 points × 5 s = 50 s.")
    _looks_right(page, "profile form")
    screenshot("profile-form", page)

    page.goto(f"{live_server.url}/team/settings/")
    _looks_right(page, "team settings")
    screenshot("team-settings", page)


def _looks_right(page, name: str) -> None:
    assert page.evaluate(UNLABELLED_CONTROLS) == [], name
    assert_fits(page, name)
    assert page.js_errors == [], name


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_compare_sweeps_draws_both_sides_curve_on_curve(request, screen, disk, host, broker, owner, live_server,
                                                         screenshot):  # fmt: skip
    other = DiskFactory(host=host, label="new")
    profile = sweep_profile(disk.team, name="QD sweep")
    for i in range(5):
        finished_sweep(disk, profile, [(1000 + i, 100), (1900 + i, 150), (2000 + i, 400)])
        finished_sweep(other, profile, [(1000 + i, 100), (1520 + i, 150), (1600 + i, 400)])
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/sets/compare/?a_disk={disk.pk}&b_disk={other.pk}")
    wait_until(page, "window.Chart && Chart.getChart('set-iops-chart') && Chart.getChart('set-latency-chart')")

    labels = page.evaluate("Chart.getChart('set-iops-chart').data.datasets.map((d) => d.label)")
    assert [label for label in labels if label.endswith("— IOPS")] == [f"A: {disk.label} — IOPS", "B: new — IOPS"]
    assert f"A: {disk.label} — knee at QD 4" in labels and "B: new — knee at QD 4" in labels
    assert "Knee IOPS: B: new is 20 % slower" in page.locator("#sweep-compare-knee-text").inner_text()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("compare-sweeps", page)
