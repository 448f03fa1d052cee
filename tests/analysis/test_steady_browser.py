"""Steady state as a person sees it, in a real headless Chromium: the profile form's suggestions, the disk
chart's hollow points and its steady-only filter, the run page's words."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.imports import importing
from jobs.models import Disk, Host, Run
from jobs.teams import membership as teams
from tests.browser import log_in, wait_until
from tests.builders import rerun_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-password-8"
FIXTURES = Path(__file__).parent.parent / "fixtures"
ALL_POINTS = "Chart.getChart('iops-chart').data.datasets.flatMap((d) => d.data)"


def _user(username: str) -> User:
    user = User.objects.create_user(username, password=PASSWORD)
    teams.place_new_user(user)
    return user


def _disk_with_stamped_imports(user: User) -> Disk:
    """Real fio outputs with ss imported a few hours apart: three that reached steady state, three that did not."""
    team = user.memberships.get().team
    host = Host.objects.create(team=team, name="vm", address="192.0.2.10", username="bench")
    disk = Disk.objects.create(host=host, label="data", target_path="/data", disk_type="alibaba-ultra", size=100)
    for name in ("attained", "not-attained"):
        text = (FIXTURES / f"fio-3.33-ss-{name}.json").read_text()
        for hours in (30, 20, 10):
            at = timezone.now() - timedelta(hours=hours)
            importing.import_result(disk, rerun_of(text, hours * 3600), name=f"{name}.json", at=at)
    return disk


def test_picking_a_criterion_fills_in_the_suggested_settings_and_the_preview(page, live_server, screenshot):
    _user("former")
    log_in(page, live_server.url, "former", PASSWORD)
    page.goto(f"{live_server.url}/profiles/new/")
    assert page.locator("[data-ss-settings]").is_hidden()
    page.get_by_label("File size per job").fill("1G")  # a directory target needs one, or nothing previews
    page.get_by_label("Steady-state criterion (fio ss)").select_option("iops_slope")
    assert page.get_by_label("Limit").input_value() == "0.3%"
    assert page.get_by_label("Window (seconds, ss_dur)").input_value() == "30"
    assert page.get_by_label("Wait before looking (seconds, ss_ramp)").input_value() == "10"
    wait_until(page, "document.getElementById('command-preview').textContent.includes('ss=iops_slope:0.3%')")
    page.locator("#steady-state").scroll_into_view_if_needed()
    screenshot("desktop", on=page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#steady-state").scroll_into_view_if_needed()
    screenshot("phone", on=page)
    page.get_by_label("Steady-state criterion (fio ss)").select_option("")
    assert page.get_by_label("Limit").input_value() == "" and page.locator("[data-ss-settings]").is_hidden()
    assert page.js_errors == []


def test_the_disk_chart_draws_unsteady_runs_hollow_and_can_leave_them_out(page, live_server, screenshot):
    disk = _disk_with_stamped_imports(_user("charter"))
    log_in(page, live_server.url, "charter", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/?range=7d")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    assert page.evaluate(f"{ALL_POINTS}.filter((p) => p.steady === false).length") >= 3
    assert "Hollow points are runs not in steady state" in page.locator("#chart-status").inner_text()
    screenshot("every-run", on=page)
    page.get_by_label("Steady runs only").check()
    wait_until(page, "window.location.search.includes('steady=only')")
    wait_until(page, f"{ALL_POINTS}.length > 0 && {ALL_POINTS}.every((p) => p.steady === true)")
    screenshot("steady-only", on=page)
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("steady-only-phone", on=page)
    assert page.js_errors == []


def test_the_run_page_says_when_steady_state_was_reached(page, live_server, screenshot):
    disk = _disk_with_stamped_imports(_user("reader"))
    run = Run.objects.filter(disk=disk, steady_state__state="steady").first()
    log_in(page, live_server.url, "reader", PASSWORD)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert (
        page.locator("#run-steady").inner_text() == "Steady state: reached after 8 s (fio, iops_slope 0.3 % over 5 s)."
    )
    screenshot("steady", on=page)
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("steady-phone", on=page)
