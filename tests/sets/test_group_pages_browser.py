"""A group's page in a real Chromium, on a phone (390 px) and a desktop (1280 px): the per-second total drawn by
Chart.js with the group's limit as a line, the members side by side, the page within the screen, every control
labelled, no JavaScript errors."""

from __future__ import annotations

import pytest

from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in, wait_until
from tests.sets.groups import group_on_one_host

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_group_page_draws_its_total_against_its_limit_on_a_phone_and_a_desktop(
    request, screen, host, owner, live_server, screenshot, broker
):
    run_set = group_on_one_host(host, [1450.0, 1210.0, 1380.0, 990.0], cap_iops=5000)
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/sets/{run_set.pk}/")
    wait_until(page, "window.Chart && Chart.getChart('group-iops-chart')")

    assert page.locator("canvas#group-iops-chart").is_visible()
    chart = "Chart.getChart('group-iops-chart')"
    limit = page.evaluate(f"{chart}.options.plugins.annotation.annotations.limit")
    assert limit["yMin"] == 5000 and limit["label"]["content"] == "group limit 5,000 IOPS"
    assert page.evaluate(f"{chart}.data.datasets[0].data.filter((p) => p.every).length") == 14
    assert page.evaluate(f"{chart}.data.datasets[0].data.length") == 20
    assert "14 of 20 seconds with every member running" in page.locator("#group-chart-status").inner_text()
    assert "Slowest: member 4" in page.locator("#group-comparison").inner_text()
    members = page.locator("#group-members-table tbody tr")
    assert members.count() == 4 and "+0.0010 s ± 0.0003 s" in members.nth(3).inner_text()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("group", page)
