"""One zone a page, named (issue 29, item 8): the heatmap, the worst hour, the report's chart, the before/after
split, a schedule's window errors and a share link's page and JSON all say their times in one zone and name it;
the pickers take 24-hour times whatever the browser's locale."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from django.core.cache import cache
from django.test import Client

from jobs import clock
from jobs.models import Preferences, Profile, Schedule, ShareLink
from jobs.results import compliance
from jobs.results import stability as disk_stability
from tests.analysis.histories import NOW, measured
from tests.browser import assert_fits, log_in, settle
from tests.factories import ProfileFactory, nightly_runs

KOLKATA = ZoneInfo("Asia/Kolkata")


@pytest.fixture
def quick(team) -> Profile:
    return ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)


def _reads_in(owner, zone: str) -> None:
    Preferences.objects.update_or_create(user=owner, defaults={"time_zone": zone})


def _week_of_runs(disk, now: datetime) -> None:
    """Seven days of runs at 01:00, 03:00 (the slow ones) and 14:00 UTC."""
    for day in range(1, 8):
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=day)
        measured(disk, at=midnight + timedelta(hours=1), iops=4000.0)
        measured(disk, at=midnight + timedelta(hours=3), iops=2400.0 + 100 * day)
        measured(disk, at=midnight + timedelta(hours=14), iops=3600.0)


# ----------------------------------------------------------------------------- heatmap and worst hour


def test_the_heatmap_places_each_run_by_its_finish_on_the_readers_clock_even_half_an_hour_off(disk):
    _week_of_runs(disk, NOW)
    query = compliance.parse({"period": "all"}, now=NOW)
    found = disk_stability.heatmap(disk, query, KOLKATA)
    # 03:00 UTC is 08:30 in Kolkata: hour 8 of the same day; 14:00 UTC is 19:30.
    tuesday = next(day for day in found["days"] if day["day"] == "Tue")
    assert [hour for hour, cell in enumerate(tuesday["hours"]) if cell["runs"]] == [6, 8, 19]
    assert found["zone"] == "Asia/Kolkata"
    assert disk_stability.heatmap(disk, query)["zone"] == "UTC"  # the API's, unchanged


def test_the_disk_page_draws_the_heatmap_and_the_worst_hour_in_the_readers_zone_and_names_it(disk, owner, owner_client):
    _reads_in(owner, "Asia/Kolkata")
    _week_of_runs(disk, datetime.now(UTC))
    page = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    assert '<span class="hint" id="heatmap-zone">Asia/Kolkata · ' in page
    assert ":00 UTC ·" not in page and re.search(r'title="\w{3} 08:00 Asia/Kolkata · 1 run"', page)
    worst = re.search(r'<dd id="compliance-worst-hour">(.*?)</dd>', page)[1]
    assert worst.startswith('08:30–09:30 IST <span class="hint">(Asia/Kolkata)</span>:'), worst
    assert "UTC" not in worst


def test_a_utc_hour_reads_on_a_zones_clock_at_its_offset_then():
    summer, winter = datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    assert clock.utc_hour(3, KOLKATA, winter) == "08:30–09:30 IST"
    assert clock.utc_hour(23, ZoneInfo("Europe/Berlin"), summer) == "01:00–02:00 CEST"
    assert clock.utc_hour(23, ZoneInfo("Europe/Berlin"), winter) == "00:00–01:00 CET"
    assert clock.utc_hour(0, ZoneInfo("America/New_York"), winter) == "19:00–20:00 EST"


# ----------------------------------------------------------------------------- the printable report


def test_the_reports_chart_and_worst_hour_are_in_the_readers_zone_and_say_so(disk, owner, owner_client):
    _reads_in(owner, "Asia/Kolkata")
    _week_of_runs(disk, datetime.now(UTC))
    page = owner_client.get(f"/disks/{disk.pk}/report/?period=30d").content.decode()
    ticks = re.findall(r'<text class="xtick [a-z]+" x="[\d.]+" y="[\d.]+">([^<]+)</text>', page)
    # The first run finished at 01:00 UTC: 06:30 in Kolkata.
    assert ticks and ticks[0].endswith(" 06:30"), ticks
    assert "by its finish (Asia/Kolkata)" in page and "by its finish (UTC)" not in page
    worst = re.search(r'<dd id="report-worst-hour">(.*?)</dd>', page)[1]
    assert worst.startswith("08:30–09:30 IST"), worst


# ----------------------------------------------------------------------------- Compare: before and after a date


def test_the_before_after_split_date_is_midnight_in_the_readers_zone(pair, owner, owner_client):
    _reads_in(owner, "America/New_York")
    rng = np.random.default_rng(20)
    # At 02:00 UTC from 2026-09-01: 22:00 EDT the evening before.
    nightly_runs(pair[0], list(rng.normal(4000, 200, 8)), start=datetime(2026, 9, 1, 2, 0, tzinfo=UTC))
    page = owner_client.get(f"/compare/?disk={pair[0].pk}&split=2026-09-05").content.decode()
    # Midnight EDT of the 5th is 04:00 UTC: the run at 02:00 UTC on the 5th (22:00 EDT on the 4th) is before it.
    assert "before 2026-09-05 00:00 EDT has 5 runs and after 2026-09-05 00:00 EDT has 3 runs" in page, page
    assert 'id="before-after-zone">Midnight of the date in America/New_York' in page
    report = owner_client.get(f"/compare/report/?disks={pair[0].pk},{pair[1].pk}&disk={pair[0].pk}&split=2026-09-05")
    # Not the split in UTC (the report's own generation time may say UTC, and at 07:00:00 held "00:00 UTC" too).
    assert (
        "before 2026-09-05 00:00 EDT" in report.content.decode()
        and "2026-09-05 00:00 UTC" not in report.content.decode()
    )


# ----------------------------------------------------------------------------- schedules


def test_a_berlin_schedules_window_error_says_its_times_in_berlin_with_the_zone_named(owner_client, disk, quick):
    data = {"name": "nightly", "kind": "cron", "cron": "30 2 * * *", "timezone": "Europe/Berlin",
            "stagger_s": "60", "misfire_grace_s": "300", "enabled": "on", "targets": [disk.pk],
            "profile_0": quick.pk, "window_start": "2026-05-08 00:00", "window_end": "2026-05-01 00:00"}  # fmt: skip
    response = owner_client.post("/schedules/new/", data)
    message = " ".join(response.context["form"].errors["window_end"])
    assert "the window ends at 2026-05-01 02:00 CEST" in message
    assert message.endswith("(times in the schedule's zone, Europe/Berlin)"), message
    assert not Schedule.objects.exists()


def test_a_schedules_times_are_typed_24_hour_in_the_readers_zone(owner, owner_client, disk, quick):
    _reads_in(owner, "Europe/Berlin")
    form = owner_client.get("/schedules/new/").content.decode()
    field = re.search(r'<input [^>]*name="starts_at"[^>]*>', form)[0]
    assert 'type="text"' in field and 'placeholder="2026-11-25 21:24"' in field and "datetime-local" not in form
    data = {"name": "nightly", "kind": "interval", "interval_minutes": "60", "timezone": "Europe/Berlin",
            "stagger_s": "60", "misfire_grace_s": "300", "enabled": "on", "targets": [disk.pk],
            "profile_0": quick.pk, "starts_at": "2026-12-01 21:30"}  # fmt: skip
    assert owner_client.post("/schedules/new/", data).status_code == 302
    assert Schedule.objects.get().starts_at == datetime(2026, 12, 1, 20, 30, tzinfo=UTC)
    edit = owner_client.get(f"/schedules/{Schedule.objects.get().pk}/").content.decode()
    assert 'value="2026-12-01 21:30"' in edit


# ----------------------------------------------------------------------------- share links


@pytest.fixture
def berlin_link(owner, owner_client, disk) -> str:
    """A disk link made by a reader in Berlin; its address."""
    cache.clear()
    _reads_in(owner, "Europe/Berlin")
    made = owner_client.post("/shares/", {"kind": "disk", "disk": disk.pk, "expires_in_days": "30"})
    assert made.status_code == 200, made.content
    return re.search(r'<pre class="token" id="share-url">([^<]+)</pre>', made.content.decode())[1]


def test_a_share_link_writes_its_page_and_json_in_its_creators_zone_whoever_opens_it(berlin_link, owner_client):
    link = ShareLink.objects.get()
    assert link.time_zone == "Europe/Berlin"
    visitor = Client()
    visitor.cookies[clock.COOKIE] = "America/New_York"
    page = visitor.get(berlin_link).content.decode()
    assert 'data-time-zone="Europe/Berlin"' in page and 'id="share-zone">Times in Europe/Berlin, 24-hour' in page
    owner_client.post(f"/shares/{link.pk}/revoke")
    gone_page = visitor.get(berlin_link)
    gone_json = visitor.get(f"{berlin_link}series.json")
    assert (gone_page.status_code, gone_json.status_code) == (410, 410)
    said = gone_json.json()["error"]
    assert re.search(r"revoked \d{4}-\d\d-\d\d \d\d:\d\d CET?S?T?:", said), said
    assert said in gone_page.content.decode().replace("&#x27;", "'")
    assert "Times in Europe/Berlin" in gone_page.content.decode()


def test_an_unknown_share_token_answers_in_utc(owner):
    cache.clear()
    visitor = Client()
    visitor.cookies[clock.COOKIE] = "America/New_York"
    page = visitor.get(f"/s/{'A' * 43}/").content.decode()
    assert 'data-time-zone="UTC"' in page


# ----------------------------------------------------------------------------- in a real browser


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_pickers_show_24_hour_times_in_a_us_english_browser(
    screen, disk, quick, owner, request, live_server, screenshot
):
    _reads_in(owner, "Europe/Berlin")
    page = request.getfixturevalue(screen)
    assert page.evaluate("navigator.language") == "en-US"  # the locale that draws datetime-local with AM/PM
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/schedules/new/")
    settle(page)
    start = page.locator("#id_window_start")
    start.fill("2026-12-01 21:30")
    assert start.evaluate("e => e.type") == "text" and start.input_value() == "2026-12-01 21:30"
    assert start.evaluate("e => e.checkValidity()")
    start.fill("2026-12-01 9:30 PM")
    assert not start.evaluate("e => e.checkValidity()")  # the page refuses a 12-hour time before sending it
    start.fill("2026-12-01 21:30")
    start.scroll_into_view_if_needed()
    screenshot("schedule-form", on=page)
    assert_fits(page, "schedule form")
    page.goto(f"{live_server.url}/runs/")
    settle(page)
    assert page.locator("#runs-after").evaluate("e => e.type") == "text"
    screenshot("runs", on=page)
    assert_fits(page, "runs")
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    settle(page)
    page.get_by_label("Time range").select_option("custom")
    page.locator("#chart-from").fill("2026-11-20 08:00")
    assert page.locator("#chart-from").evaluate("e => e.type === 'text' && e.checkValidity()")
    # The chart reads the field on the page's clock (Berlin: 07:00 UTC) and writes an instant back the same way.
    assert page.evaluate("window.benchClock.fromInput(document.getElementById('chart-from').value)") == (
        datetime(2026, 11, 20, 7, tzinfo=UTC).timestamp() * 1000
    )
    assert page.evaluate("window.benchClock.toInput(Date.UTC(2026, 6, 1, 19, 5))") == "2026-07-01 21:05"
    screenshot("disk-range", on=page)
    assert not page.js_errors


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_before_after_split_date_is_written_as_the_pages_write_dates_in_a_us_english_browser(
    screen, disk, owner, request, live_server, screenshot
):
    # A browser's <input type="date"> shows mm/dd/yyyy under en-US, beside dates the pages write 2026-09-05.
    page = request.getfixturevalue(screen)
    assert page.evaluate("navigator.language") == "en-US"
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/compare/")
    settle(page)
    split = page.locator("#before-after input[name=split]")
    assert split.evaluate("e => e.type") == "text" and split.get_attribute("placeholder") == "2026-11-25"
    split.fill("09/05/2026")
    assert not split.evaluate("e => e.checkValidity()")  # refused before it is sent, as the API would
    split.fill("2026-09-05")
    assert split.evaluate("e => e.checkValidity()")
    split.scroll_into_view_if_needed()
    screenshot("compare-split", on=page)
    assert_fits(page, "compare before/after")
    page.locator("#before-after button").click()
    page.wait_for_url("**split=2026-09-05**")
    assert page.locator("#before-after input[name=split]").input_value() == "2026-09-05"
    assert not page.js_errors
