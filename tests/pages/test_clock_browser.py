"""One labelled clock in a real browser whose time zone is New York: the run page, the disk page and its chart
(axis, zoomed ticks, tooltip), the schedule list and its preview all say the zone, 24-hour; a zone chosen under
Preferences wins over the browser's. At desktop and phone widths."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User

from jobs import clock
from jobs.imports import importing
from jobs.models import Disk, Host, Preferences, Run, Schedule
from jobs.teams import membership as teams
from tests.browser import DESKTOP, PHONE, _open, log_in, wait_until
from tests.factories import ProfileFactory, ScheduleFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-clock-password-5"
FIXTURES = Path(__file__).parent.parent / "fixtures"
NEW_YORK, BERLIN, TOKYO = ZoneInfo("America/New_York"), ZoneInfo("Europe/Berlin"), ZoneInfo("Asia/Tokyo")
# Three distinct outputs (the same one twice is refused as a duplicate), finished on three days.
IMPORTS = {
    "fio-3.33-randread-jsonplus.json": datetime(2026, 11, 20, 20, 24, 52, tzinfo=UTC),
    "fio-3.33-randrw.json": datetime(2026, 11, 21, 9, 5, 7, tzinfo=UTC),
    "fio-3.33-numjobs2-jsonplus.json": datetime(2026, 11, 22, 23, 59, 30, tzinfo=UTC),
}
# Every tick label of the disk chart's time axis against Intl in the given zone (not benchweb's own code).
TICKS = """(zone) => {
  const x = Chart.getChart('iops-chart').scales.x;
  const wall = new Intl.DateTimeFormat('en-GB',
    {timeZone: zone, hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23'});
  return x.ticks.filter((t) => t.label).map((t) => [t.label, wall.format(t.value)]);
}"""
TOOLTIP = """() => {
  const chart = Chart.getChart('iops-chart');
  const meta = chart.getDatasetMeta(0);
  const point = meta.data[0];
  chart.tooltip.setActiveElements([{datasetIndex: 0, index: 0}], {x: point.x, y: point.y});
  chart.update('none');
  return chart.tooltip.title;
}"""


@pytest.fixture(params=["desktop", "phone"])
def new_york_page(request, browser):
    """A browser in New York (Playwright's timezone_id), at desktop and phone width."""
    yield from _open(browser, {**(DESKTOP if request.param == "desktop" else PHONE), "timezone_id": "America/New_York"})


def _lab(username: str) -> tuple[User, Disk, list[Run], Schedule]:
    user = User.objects.create_user(username, password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="vm", address="192.0.2.10", username="bench")
    disk = Disk.objects.create(host=host, label="data", target_path="/data", disk_type="alibaba-ultra", size=100)
    runs = [
        importing.import_result(disk, (FIXTURES / name).read_text(), name=name, at=at) for name, at in IMPORTS.items()
    ]
    quick = ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    schedule = ScheduleFactory(team=team, name="nightly", targets=[disk], profiles=[quick], timezone="Asia/Tokyo",
                               cron="30 2 * * *", stagger_s=60)  # fmt: skip
    return user, disk, runs, schedule


def _chart_shows(page, disk: Disk, zone: ZoneInfo, live_server) -> None:
    page.goto(f"{live_server.url}/disks/{disk.pk}/?range=all")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    title = page.evaluate("Chart.getChart('iops-chart').options.scales.x.title.text")
    assert title.startswith(f"run finished, {zone.key} time ("), title
    first = IMPORTS["fio-3.33-randread-jsonplus.json"]
    # Zoomed to ten minutes: second or minute ticks, which the date-fns adapter wrote "3:20:47 PM" in the
    # browser's zone.
    span = {
        "min": (first - timedelta(minutes=5)).timestamp() * 1000,
        "max": (first + timedelta(minutes=5)).timestamp() * 1000,
    }
    page.evaluate(f"Chart.getChart('iops-chart').zoomScale('x', {span}, 'none')")
    ticks = page.evaluate(TICKS, zone.key)
    times = [(re.fullmatch(r"(?:[A-Z][a-z]{2} \d{1,2} )?(\d\d:\d\d(?::\d\d)?)", label), wall) for label, wall in ticks]
    assert times and all(time and wall.startswith(time.group(1)) for time, wall in times), ticks
    expected = {clock.show(at, zone, clock.MINUTES) for at in IMPORTS.values()}
    page.evaluate("Chart.getChart('iops-chart').resetZoom('none')")
    tooltip = page.evaluate(TOOLTIP)
    assert tooltip and tooltip[0] in expected, (tooltip, expected)


def test_every_time_says_the_browsers_zone_in_24_hour_form(new_york_page, live_server, screenshot):
    page = new_york_page
    _, disk, runs, schedule = _lab("newyorker")
    log_in(page, live_server.url, "newyorker", PASSWORD)

    run = runs[0]
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    facts = page.locator("dl.facts")
    assert facts.locator("dt:text('Finished') + dd").inner_text() == "2026-11-20 15:24:52 EST"
    created = facts.locator("dt:text('Created') + dd").inner_text()
    assert created == clock.show(Run.objects.get(pk=run.pk).created_at, NEW_YORK)
    screenshot("run", on=page)

    _chart_shows(page, disk, NEW_YORK, live_server)
    recent = page.locator("td[data-label='Created'] time").all_inner_texts()
    assert recent and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T", text) for text in recent), recent
    screenshot("disk", on=page)

    page.goto(f"{live_server.url}/schedules/")
    schedule.refresh_from_db()
    cell = page.locator("td[data-label='Next fire']").inner_text()
    assert clock.show(schedule.next_fire_at, NEW_YORK, clock.MINUTES) in cell
    assert f"({clock.show(schedule.next_fire_at, TOKYO, clock.MINUTES)} in the schedule's zone)" in cell
    assert " 02:30 JST" in cell
    screenshot("schedules", on=page)

    page.goto(f"{live_server.url}/schedules/{schedule.pk}/")
    wait_until(page, "document.querySelector('#preview .fire-at')")
    first_fire = clock.show(schedule.next_fire_at, NEW_YORK, clock.MINUTES)
    assert page.locator("#preview .fire-at").first.inner_text() == first_fire
    assert page.locator("#preview .fire-at-schedule").first.inner_text().endswith("02:30 JST in the schedule's zone)")
    start = clock.show(schedule.next_fire_at, NEW_YORK, "%H:%M:%S")
    assert f"at {start} (+0 s)" in page.locator("#preview li").first.inner_text()
    screenshot("preview", on=page)
    assert page.js_errors == []


def test_a_chosen_zone_wins_over_the_browsers(new_york_page, live_server, screenshot):
    page = new_york_page
    user, disk, runs, _ = _lab("berliner")
    log_in(page, live_server.url, "berliner", PASSWORD)
    page.goto(f"{live_server.url}/account/preferences/")
    zone = page.get_by_label("Time zone")
    assert zone.locator("option").first.inner_text() == "Browser's zone (currently America/New_York)"
    zone.select_option("Europe/Berlin")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"{live_server.url}/account/preferences/")
    assert Preferences.objects.get(user=user).time_zone == "Europe/Berlin"
    assert page.locator("#clock-now time").inner_text().endswith(" CET")
    screenshot("preferences", on=page)

    page.goto(f"{live_server.url}/runs/{runs[0].pk}/")
    assert page.locator("dl.facts dt:text('Finished') + dd").inner_text() == "2026-11-20 21:24:52 CET"
    _chart_shows(page, disk, BERLIN, live_server)
    screenshot("disk", on=page)
    assert page.js_errors == []
