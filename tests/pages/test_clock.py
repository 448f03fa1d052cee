"""One labelled clock: the reader's zone (their choice, else their browser's, else UTC), 24-hour times that say
their zone on the pages, and an API that stays in UTC with ISO 8601 offsets."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import clock
from jobs.models import Preferences, Run
from jobs.schedules import dispatcher
from tests.factories import DiskFactory, ProfileFactory, RunFactory, ScheduleFactory

BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")
WINTER = datetime(2026, 11, 25, 20, 24, 52, tzinfo=UTC)
SUMMER = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_a_chosen_zone_wins_over_the_browsers_and_utc_is_the_last_resort():
    assert clock.choose("Europe/Berlin", "America/New_York") == clock.Clock(BERLIN, "preference", "America/New_York")
    assert clock.choose("", "America/New_York") == clock.Clock(NEW_YORK, "browser", "America/New_York")
    assert clock.choose("", None) == clock.Clock(ZoneInfo("UTC"), "default", "")


@pytest.mark.parametrize("bad", ["Mars/Olympus", "../../etc/passwd", "America/New_York; rm -rf /", "x" * 80, "/abs"])
def test_a_name_zoneinfo_does_not_know_counts_as_none(bad):
    assert clock.zone_or_none(bad) is None
    assert clock.choose(bad, bad).source == "default"
    assert clock.choose(bad, "Asia/Tokyo").name == "Asia/Tokyo"


def test_a_time_is_24_hour_and_says_its_zone_with_summer_time():
    assert clock.show(WINTER, BERLIN) == "2026-11-25 21:24:52 CET"
    assert clock.show(SUMMER, BERLIN, clock.MINUTES) == "2026-07-01 14:00 CEST"
    assert clock.show(WINTER, NEW_YORK) == "2026-11-25 15:24:52 EST"
    assert clock.show(WINTER, ZoneInfo("UTC")) == "2026-11-25 20:24:52 UTC"


def test_a_zone_without_an_abbreviation_is_labelled_with_its_offset():
    assert clock.show(WINTER, ZoneInfo("Asia/Dubai")) == "2026-11-26 00:24:52 UTC+04"
    assert clock.abbreviations(ZoneInfo("Asia/Dubai")) == {240: "UTC+04"}
    assert clock.abbreviations(BERLIN) == {60: "CET", 120: "CEST"}


def test_stored_utc_times_are_rewritten_in_the_readers_zone():
    text = "waiting: stagger slot 2 of 3 at 2026-11-25 20:24:52 UTC; window from 2026-11-25 20:24 UTC"
    assert clock.in_zone(text, BERLIN) == (
        "waiting: stagger slot 2 of 3 at 2026-11-25 21:24:52 CET; window from 2026-11-25 21:24 CET"
    )
    assert clock.in_zone(text, ZoneInfo("UTC")) == text
    assert clock.in_zone("waiting: disk busy with run 41", BERLIN) == "waiting: disk busy with run 41"


def test_the_second_zone_is_shown_only_where_it_reads_differently():
    assert clock.show_also(WINTER, BERLIN, NEW_YORK) == "2026-11-25 15:24 EST"
    assert clock.show_also(WINTER, BERLIN, ZoneInfo("Europe/Paris")) == ""


def test_the_when_filter_writes_a_labelled_time_element_in_the_active_zone():
    template = Template('{{ moment|when }}|{{ moment|when:"minutes" }}|{{ nothing|when|default:"never" }}')
    with timezone.override(BERLIN):
        out = template.render(Context({"moment": WINTER, "nothing": None}))
    assert out == (
        '<time datetime="2026-11-25T21:24:52+01:00">2026-11-25 21:24:52 CET</time>|'
        '<time datetime="2026-11-25T21:24:52+01:00">2026-11-25 21:24 CET</time>|never'
    )


def test_no_template_writes_a_time_with_djangos_date_filter():
    """|date and |time write no zone and follow no 24-hour rule of ours: times go through |when. A |date of a
    calendar day (Y-m-d, weekday names) is fine, and so is |date:"c", ISO 8601 for scripts, not for people."""
    templates = Path(__file__).parent.parent.parent / "templates"
    time_format = re.compile(r"[HhGgisaAPTeOZUcr]")
    found = [
        f"{path.relative_to(templates)}: {match.group(0)}"
        for path in templates.rglob("*.html")
        for match in re.finditer(r"\|(date|time)(?::(['\"])(.*?)\2)?|naturaltime|timesince|timeuntil", path.read_text())
        if match.group(1) != "date"
        or match.group(3) is None
        or (match.group(3) != "c" and time_format.search(match.group(3)))
    ]
    assert found == []


# ---------------------------------------------------------------------------------------------- pages


@pytest.fixture
def finished_run(disk) -> Run:
    run = RunFactory(disk=disk, succeeded=True, finished_at=WINTER, started_at=WINTER - timedelta(seconds=60))
    Run.objects.filter(pk=run.pk).update(created_at=WINTER - timedelta(seconds=70))  # auto_now_add otherwise
    return run


def _times(html: str) -> list[str]:
    return re.findall(r"<time datetime=\"[^\"]+\">([^<]+)</time>", html)


def test_the_run_page_uses_the_browsers_zone_from_its_cookie(owner_client, finished_run):
    owner_client.cookies[clock.COOKIE] = "America/New_York"
    html = owner_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert "2026-11-25 15:24:52 EST" in _times(html)
    assert 'data-time-zone="America/New_York"' in html


def test_a_chosen_zone_wins_over_the_browsers_on_every_page(owner, owner_client, finished_run, disk):
    Preferences.objects.create(user=owner, time_zone="Europe/Berlin")
    owner_client.cookies[clock.COOKIE] = "America/New_York"
    run_page = owner_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert "2026-11-25 21:24:52 CET" in _times(run_page)
    assert not any("EST" in t or "UTC" in t for t in _times(run_page))
    disk_page = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    assert "2026-11-25 21:23 CET" in _times(disk_page)  # recent runs: created 70 s before it finished


def test_without_a_cookie_or_a_choice_pages_say_utc(owner_client, finished_run):
    owner_client.cookies[clock.COOKIE] = "Not/AZone"
    html = owner_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert "2026-11-25 20:24:52 UTC" in _times(html)


def test_the_preferences_page_offers_the_browsers_zone_and_saves_a_choice(owner, owner_client):
    owner_client.cookies[clock.COOKIE] = "America/New_York"
    page = owner_client.get("/account/preferences/").content.decode()
    assert "Browser&#x27;s zone (currently America/New_York)" in page
    assert '<option value="Europe/Berlin">' in page
    response = owner_client.post("/account/preferences/", {"time_zone": "Europe/Berlin"})
    assert response.status_code == 302
    assert Preferences.objects.get(user=owner).time_zone == "Europe/Berlin"
    assert 'data-time-zone="Europe/Berlin"' in owner_client.get("/account/preferences/").content.decode()
    refused = owner_client.post("/account/preferences/", {"time_zone": "Mars/Olympus"})
    assert refused.status_code == 200 and "Europe/Berlin" in refused.content.decode()
    assert Preferences.objects.get(user=owner).time_zone == "Europe/Berlin"
    owner_client.post("/account/preferences/", {"time_zone": ""})
    assert 'data-time-zone="America/New_York"' in owner_client.get("/account/preferences/").content.decode()


def test_a_waiting_runs_explanation_is_stored_in_utc_and_shown_in_the_readers_zone(owner, owner_client, team, host):
    quick = ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    disks = [DiskFactory(host=host, label=f"d{i}", target_path=f"/data/d{i}") for i in range(2)]
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = ScheduleFactory(team=team, targets=disks, profiles=[quick], kind="interval", interval_minutes=60,
                               starts_at=start, stagger_s=30, timezone="Asia/Tokyo")  # fmt: skip
    dispatcher.materialise(start + timedelta(seconds=1))
    run = Run.objects.filter(schedule=schedule).order_by("not_before").last()
    assert run.explanation == f"waiting: stagger slot 2 of 2 at {clock.utc_text(start + timedelta(seconds=30))}"
    Preferences.objects.create(user=owner, time_zone="America/New_York")
    shown = f"waiting: stagger slot 2 of 2 at {clock.show(start + timedelta(seconds=30), NEW_YORK)}"
    assert shown in owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert owner_client.get(f"/runs/{run.pk}/progress.json").json()["explanation"] == shown


def test_the_api_stays_iso_8601_in_utc_whatever_the_readers_zone(owner, owner_client, finished_run):
    Preferences.objects.create(user=owner, time_zone="Asia/Tokyo")
    owner_client.cookies[clock.COOKIE] = "America/New_York"
    body = owner_client.get(f"/api/v1/runs/{finished_run.pk}/").json()
    assert body["finished_at"] in ("2026-11-25T20:24:52Z", "2026-11-25T20:24:52+00:00")
    assert datetime.fromisoformat(body["created_at"].replace("Z", "+00:00")).utcoffset() == timedelta(0)
    listed = owner_client.get("/api/v1/runs/").json()
    item = next(r for r in listed["results"] if r["id"] == finished_run.pk)
    assert item["finished_at"] == body["finished_at"]


def test_the_schedule_list_shows_the_next_fire_in_the_readers_zone_and_the_schedules(owner, owner_client, team, disk):
    quick = ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    schedule = ScheduleFactory(team=team, targets=[disk], profiles=[quick], timezone="Asia/Tokyo", cron="30 2 * * *")
    Preferences.objects.create(user=owner, time_zone="Europe/Berlin")
    html = owner_client.get("/schedules/").content.decode()
    schedule.refresh_from_db()
    assert clock.show(schedule.next_fire_at, BERLIN, clock.MINUTES) in _times(html)
    tokyo = clock.show(schedule.next_fire_at, ZoneInfo("Asia/Tokyo"), clock.MINUTES)
    assert f"({tokyo} in the schedule's zone)" in html
    assert " 02:30 JST" in html


def test_the_calendar_labels_its_range_and_bars_in_the_readers_zone(owner, owner_client, team, disk):
    quick = ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    ScheduleFactory(team=team, targets=[disk], profiles=[quick], timezone="Asia/Tokyo", cron="30 2 * * *")
    Preferences.objects.create(user=owner, time_zone="America/New_York")
    html = owner_client.get("/schedules/calendar/").content.decode()
    shown = _times(html)
    assert len(shown) == 2 and all(re.fullmatch(r"[A-Z][a-z]{2} \d\d [A-Z][a-z]{2} \d\d:\d\d E[SD]T", t) for t in shown)
    titles = re.findall(r'class="bar [^"]*"[^>]* title="([^"]+)"', html)
    assert titles and all(re.search(r"\d\d:\d\d E[SD]T to \d\d:\d\d E[SD]T", t) for t in titles), titles[:3]
    assert all("02:30" not in t.split(" to ")[0] for t in titles)  # the schedule's 02:30 JST is 12:30 in New York


def test_the_readers_zone_costs_no_query_of_its_own(owner, owner_client, finished_run):
    Preferences.objects.create(user=owner, time_zone="Europe/Berlin")
    with CaptureQueriesContext(connection) as queries:
        body = owner_client.get(f"/runs/{finished_run.pk}/progress.json").json()
    assert body["state"] == "succeeded"
    sql = [q["sql"] for q in queries]
    assert not any('FROM "jobs_preferences"' in q for q in sql), sql
    assert any('"jobs_preferences"' in q and 'FROM "auth_user"' in q for q in sql)  # joined to the user's
