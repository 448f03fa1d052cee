"""Change points and annotations as a person sees them, in a real headless Chromium: the markers on the disk
charts, the disk page's Changes card, the team's Changes page with Mark expected and a note added, at 1,280
and 390 px (nothing sticks out, every control labelled, no JavaScript errors)."""

from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.models import Annotation, ChangePoint, Disk, Host, Profile
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in, wait_until
from tests.factories import RunFactory, fio_summary

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-password-8"
MARKS = "Object.keys(Chart.getChart('{chart}').options.plugins.annotation.annotations)"


@pytest.fixture
def disk(db) -> Disk:
    """30 nightly runs of the last month, IOPS 30 % lower from the 19th, and a note on the disk's host."""
    user = User.objects.create_user("changes", password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="db-primary-eu-west-1", address="192.0.2.10", username="bench")
    disk = Disk.objects.create(host=host, label="ultra-stripe", target_path="/data", disk_type="custom",
                               spec_iops=5000, spec_bytes_per_s=200_000_000)  # fmt: skip
    profile = Profile.objects.create(team=team, name="4k randread QD32", rw="randread", runtime_s=60)
    rng = random.Random(5)
    first = timezone.now().replace(hour=2, minute=30, second=0, microsecond=0) - timedelta(days=30)
    for night in range(30):
        iops = (4000 if night < 18 else 2800) * (1 + rng.uniform(-0.03, 0.03))
        finished = first + timedelta(days=night)
        RunFactory(disk=disk, profile=profile, succeeded=True, summary=fio_summary(read_iops=iops),
                   parameters=profile.parameters(), started_at=finished - timedelta(seconds=60), finished_at=finished,
                   recorded=True)  # fmt: skip
    Annotation.objects.create(team=team, host=host, at=first + timedelta(days=9, hours=10), text="kernel upgrade")
    return disk


def _fits(page) -> None:
    assert page.evaluate(STICKING_OUT) == []
    assert page.evaluate(UNLABELLED_CONTROLS) == []


def test_the_disk_charts_mark_the_change_point_and_the_note(page, live_server, disk, screenshot):
    log_in(page, live_server.url, "changes", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/?range=all")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    iops_marks = page.evaluate(MARKS.format(chart="iops-chart"))
    assert len([k for k in iops_marks if k.startswith("change")]) == 1
    assert len([k for k in iops_marks if k.startswith("note")]) == 1
    change = ChangePoint.objects.get(disk=disk, metric="iops")
    line = page.evaluate("Chart.getChart('iops-chart').options.plugins.annotation.annotations.change0")
    assert line["xMin"] == change.at_ms and line["label"]["content"].startswith(f"{round(change.change_percent)} %")
    # p99 held at 900 µs: the latency chart has the note and no change.
    assert page.evaluate(MARKS.format(chart="latency-chart")) == ["note0"]
    page.locator("#disk-charts").scroll_into_view_if_needed()
    screenshot("chart", on=page)
    card = page.locator("#disk-changes")
    assert "kernel upgrade" in card.inner_text() and "Total IOPS" in card.inner_text()
    card.scroll_into_view_if_needed()
    screenshot("card", on=page)
    _fits(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#disk-changes").scroll_into_view_if_needed()
    screenshot("card-phone", on=page)
    _fits(page)
    assert page.js_errors == []


def test_the_changes_page_marks_a_change_expected_and_takes_a_note(page, live_server, disk, screenshot):
    log_in(page, live_server.url, "changes", PASSWORD)
    page.goto(f"{live_server.url}/changes/")
    rows = page.locator("#change-points tbody tr")
    assert rows.count() == 2  # IOPS and bandwidth, at the same run
    # The bandwidth levels in the unit the disk's limit was typed in (MB/s) too, never in raw bytes per second.
    assert re.search(
        r"MiB/s = [0-9.]+ MB/s → [0-9.]+ MiB/s = [0-9.]+ MB/s", page.locator("#change-points").inner_text()
    )
    screenshot("desktop", on=page)
    _fits(page)
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("phone", on=page)
    _fits(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    change = ChangePoint.objects.get(disk=disk, metric="iops")
    # The reason the API takes, typed on the page too; the note says it.
    row = page.locator("#change-points tbody tr", has=page.get_by_role("button", name=re.compile("Total IOPS")))
    row.get_by_label("Reason").fill("moved to a smaller instance")
    page.get_by_role("button", name=f"Mark the Total IOPS change of {disk} at run {change.run_id} expected").click()
    page.wait_for_url(f"{live_server.url}/changes/")
    assert "expected: a note below" in page.locator("#change-points").inner_text()
    assert "moved to a smaller instance (expected change)" in page.locator("#annotations").inner_text()
    change.refresh_from_db()
    assert change.annotation is not None and change.annotation.text == "moved to a smaller instance"
    page.get_by_label("What happened").fill("moved to PL2")
    page.get_by_label("Disk", exact=True).select_option(label=str(disk))
    page.get_by_role("button", name="Add note").click()
    page.wait_for_url(f"{live_server.url}/changes/")
    assert "moved to PL2" in page.locator("#annotations").inner_text()
    assert Annotation.objects.filter(text="moved to PL2", disk=disk).exists()
    screenshot("after", on=page)
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("after-phone", on=page)
    _fits(page)
    assert page.js_errors == []
