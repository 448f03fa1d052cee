"""A group's page, history, groups compared and report in a real Chromium, on a phone (390 px) and a desktop
(1280 px): the total against the limit drawn by Chart.js over time, the MB/s chart saying why it is empty, the
side-by-side table within the screen, every control labelled, no JavaScript errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in, wait_until
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.groups import finished_group

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def series(disk, broker):
    """Three groups of one profile on the `disk` fixture (4,000 IOPS) and a second disk of 2,000 IOPS, a day apart;
    the tasks their ends publish go to the test's own broker, where no worker takes them."""
    other = DiskFactory(host=disk.host, label="second", spec_iops=2000)
    profile = ProfileFactory(team=disk.team, name="4k randread together")
    day = datetime(2026, 11, 20, 2, 30, tzinfo=UTC)
    return [finished_group([disk, other], profile, iops, at=day + timedelta(days=n))
            for n, iops in enumerate([[3900, 1900], [3000, 1500], [3950, 1990]])]  # fmt: skip


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_a_groups_history_and_groups_compared_fit_a_phone_and_a_desktop(
    request, screen, series, owner, live_server, screenshot
):
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")
    last = series[-1]

    page.goto(f"{live_server.url}/sets/{last.pk}/")
    assert page.locator("#group-actions").is_visible() and page.locator("#share-box").is_visible()
    assert_fits(page, screen)
    screenshot("group", page)
    page.locator("#group-history-link").click()
    wait_until(page, "window.Chart && Chart.getChart('group-history-iops-chart')")

    labels = page.evaluate("Chart.getChart('group-history-iops-chart').data.datasets.map((d) => d.label)")
    assert labels == ["total while every member ran", "the group's limit"]
    totals = page.evaluate("Chart.getChart('group-history-iops-chart').data.datasets[0].data.map((p) => p.y)")
    assert totals == [5800, 4500, 5940]
    assert "per-second samples hold IOPS only" in page.locator("#group-history-mbs .chart-empty").inner_text()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("history", page)

    page.goto(f"{live_server.url}/sets/{last.pk}/")
    page.locator("#group-compare-link").click()
    page.wait_for_load_state("load")
    table = page.locator("#group-compare-table").inner_text()
    assert "5,940 IOPS" in table and "4,500 IOPS" in table and "6,000 IOPS" in table and "IOPS IOPS" not in table
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("compare", page)

    page.goto(f"{live_server.url}/sets/{last.pk}/report/")
    history = page.locator("#report-history-section").inner_text()
    assert "Its series over time" in history and "dashed: 95 % of it" in history and "{#" not in history
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("report", page)
