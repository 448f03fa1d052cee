"""The calendar and the schedule pages in a real headless Chromium, at desktop (1280 x 800) and phone (390 x 844)
widths: day labels that never overlap, a now marker unlike the overlap mark, no silent cut of a busy lane, short
runs wide enough to see, and overlap warnings on the form and the list."""

from __future__ import annotations

import html
from datetime import timedelta
from itertools import pairwise

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.models import Disk, Host, Profile, Run, Schedule, ScheduleProfile
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, log_in, wait_until
from tests.factories import RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-calendar-password-6"

# Every day label of the axis: its box, whether its text is cut, and whether it stays inside the track.
DAY_LABELS = """() => {
  const track = document.querySelector('.axis .lane-track').getBoundingClientRect();
  return [...document.querySelectorAll('.axis .tick')].map((el) => {
    const box = el.getBoundingClientRect();
    return {text: el.innerText, left: box.left, right: box.right, top: box.top, bottom: box.bottom,
            clipped: el.scrollWidth > el.clientWidth + 1,
            inside: box.left >= track.left - 1 && box.right <= track.right + 1};
  });
}"""
COLOURS = """() => ({
  now: getComputedStyle(document.querySelector('.lane .now')).backgroundColor,
  nowLabel: getComputedStyle(document.querySelector('.now-label')).backgroundColor,
  nowKey: getComputedStyle(document.querySelector('.legend .now-key')).backgroundColor,
  overlap: getComputedStyle(document.querySelector('.lane .bar.overlap')).outlineColor,
})"""
BAR_WIDTHS = "() => [...document.querySelectorAll('.lane .bar')].map((el) => el.getBoundingClientRect().width)"


def _schedule(team, name: str, disks, profile, **fields) -> Schedule:
    schedule = Schedule.objects.create(team=team, name=name, **fields)
    schedule.targets.set(disks)
    ScheduleProfile.objects.create(schedule=schedule, profile=profile, position=0)
    return schedule


@pytest.fixture
def busy_team() -> dict:
    """Two disks on one host: a schedule every 2 minutes on one, two nightly schedules at the same minute on
    both, and a 95-second run that finished three hours ago."""
    user = User.objects.create_user("planner", password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="vm1", address="192.0.2.20", username="bench")
    data = Disk.objects.create(host=host, label="data", target_path="/data", disk_type="custom", spec_iops=4000)
    logs = Disk.objects.create(host=host, label="logs", target_path="/logs", disk_type="custom", spec_iops=4000)
    quick = Profile.objects.create(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)
    _schedule(team, "every 2 min", [data], quick, kind="interval", interval_minutes=2)
    nightly = _schedule(team, "nightly", [data], quick, cron="30 2 * * *")
    also = _schedule(team, "also nightly", [logs], quick, cron="30 2 * * *")
    finished = timezone.now() - timedelta(hours=3)
    short = RunFactory(disk=logs, profile=quick, profile_name="quick", state=Run.State.SUCCEEDED,
                       started_at=finished - timedelta(seconds=95), finished_at=finished)  # fmt: skip
    return {"user": user, "nightly": nightly, "also": also, "short": short}


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_calendar_labels_days_apart_marks_now_apart_from_overlaps_and_says_where_bars_stop(
    busy_team, width, page, phone_page, live_server, screenshot
):
    tab = page if width == "desktop" else phone_page
    log_in(tab, live_server.url, "planner", PASSWORD)
    tab.goto(f"{live_server.url}/schedules/calendar/")
    screenshot(f"week-{width}", on=tab)
    labels = tab.evaluate(DAY_LABELS)
    assert len(labels) >= 7, labels
    for label in labels:
        assert label["inside"] and not label["clipped"], label
    for left, right in pairwise(labels):
        assert left["right"] <= right["left"], (left, right)  # side by side, never on top of each other
    colours = tab.evaluate(COLOURS)
    assert colours["now"] == colours["nowLabel"] == colours["nowKey"] != colours["overlap"], colours
    assert tab.locator(".now-label").inner_text() == "now"
    # The lane of the 2-minute schedule is capped, and says so with a way to the rest.
    note = tab.locator(".lane-cap")
    assert note.count() == 1 and note.inner_text().startswith("Showing the first 400 runs of ")
    widths = tab.evaluate(BAR_WIDTHS)
    assert min(widths) >= 4, sorted(widths)[:5]
    short = tab.locator(f".bar[title^='run {busy_team['short'].pk} ']")
    assert "(1 min 35 s)" in short.get_attribute("title")
    assert short.bounding_box()["width"] >= 4
    assert tab.evaluate(STICKING_OUT) == []
    note.get_by_role("link").click()
    tab.wait_for_url(f"{live_server.url}/schedules/calendar/?day=*")
    screenshot(f"day-{width}", on=tab)
    hours = tab.evaluate(DAY_LABELS)
    assert [label["text"] for label in hours] == [f"{h:02d}:00" for h in range(0, 24, 3)]
    assert all(label["inside"] and not label["clipped"] for label in hours), hours
    assert tab.evaluate(STICKING_OUT) == []
    assert tab.js_errors == []


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_schedule_form_and_list_warn_of_an_overlap_on_a_host(busy_team, width, page, phone_page, live_server,
                                                                  screenshot):  # fmt: skip
    tab = page if width == "desktop" else phone_page
    log_in(tab, live_server.url, "planner", PASSWORD)
    also = busy_team["also"]
    tab.goto(f"{live_server.url}/schedules/{also.pk}/")
    # The live preview checks the form as typed and keeps the warning (it compares with the others, not itself).
    wait_until(tab, "document.querySelectorAll('#preview .fire').length === 10")
    warning = tab.locator("#overlap-warnings")
    assert warning.is_visible()
    assert "Overlaps schedule nightly on host vm1: first at " in warning.inner_text()
    assert warning.locator("li").count() == 2  # nightly, and every 2 min on the other disk of vm1
    tab.locator("#id_cron").fill("30 4 * * *")  # two hours later: the nightly no longer overlaps
    wait_until(tab, "document.querySelectorAll('#overlap-warnings li').length === 1")
    assert "nightly" not in warning.inner_text().replace("every 2 min", "")
    tab.locator("#id_cron").fill("30 2 * * *")
    wait_until(tab, "document.querySelectorAll('#overlap-warnings li').length === 2")
    screenshot(f"form-{width}", on=tab)
    tab.get_by_role("button", name="Save schedule").click()
    tab.wait_for_url(f"{live_server.url}/schedules/")
    shown = tab.locator(".messages li.warning")
    assert shown.count() == 2  # the other nightly, and the 2-minute schedule on the same host
    texts = [html.unescape(text) for text in shown.all_inner_texts()]
    assert any(text.startswith("Overlaps schedule nightly on host vm1") for text in texts), texts
    assert Schedule.objects.get(pk=also.pk).enabled  # saved all the same
    screenshot(f"list-{width}", on=tab)
    assert tab.evaluate(STICKING_OUT) == []
    assert tab.js_errors == []
