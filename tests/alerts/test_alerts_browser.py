"""Alerts as a person meets them, in a real headless Chromium: the nav's count, acknowledging an alert on the
Alerts page and seeing it move, triaging a regression as expected on its own page."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.alerts import evaluate
from jobs.models import Alert, Annotation, Disk, Host, Profile, Run
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in
from tests.factories import RunFactory, fio_summary

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-alerts-password-5"


@pytest.fixture
def alerts(db) -> dict[str, Alert]:
    """A disk whose IOPS fell 30 % after 18 of 30 nights (a regression), and a workload whose last run failed."""
    user = User.objects.create_user("alerts", password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="db-primary-eu-west-1", address="192.0.2.10", username="bench")
    disk = Disk.objects.create(host=host, label="ultra-stripe", target_path="/data", disk_type="custom")
    nightly = Profile.objects.create(team=team, name="4k randread QD32", rw="randread", runtime_s=60)
    rng = random.Random(5)
    first = timezone.now().replace(hour=2, minute=30, second=0, microsecond=0) - timedelta(days=30)
    for night in range(30):
        iops = (4000 if night < 18 else 2800) * (1 + rng.uniform(-0.03, 0.03))
        run = RunFactory(disk=disk, profile=nightly, succeeded=True, summary=fio_summary(read_iops=iops),
                         parameters=nightly.parameters(), finished_at=first + timedelta(days=night),
                         recorded=True)  # fmt: skip
    evaluate.run_finished(run.pk)
    writes = Profile.objects.create(team=team, name="4k randwrite QD1", rw="randwrite", runtime_s=60)
    failed = RunFactory(disk=disk, profile=writes, state=Run.State.ERROR, finished_at=timezone.now(),
                        explanation="could not start: host db-primary-eu-west-1 is unreachable")  # fmt: skip
    evaluate.run_finished(failed.pk)
    return {alert.kind: alert for alert in Alert.objects.all()}


def test_acknowledging_an_alert_moves_it_below_the_open_ones_and_out_of_the_count(
    page, live_server, alerts, screenshot
):
    log_in(page, live_server.url, "alerts", PASSWORD)
    page.goto(f"{live_server.url}/alerts/")
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link", name="Alerts 2").is_visible()
    failed = alerts["run_failed"]
    row = page.locator(f"tr[data-alert='{failed.pk}']")
    assert row.locator(".state").inner_text() == "open"
    screenshot("before")
    row.get_by_role("button", name="Acknowledge").click()
    page.wait_for_load_state("load")
    assert "Acknowledged: Run failed: 4k randwrite QD1" in page.locator("body").inner_text()
    row = page.locator(f"tr[data-alert='{failed.pk}']")
    assert row.locator(".state").inner_text() == "acknowledged"
    assert "by alerts" in row.inner_text() and row.get_by_role("button", name="Acknowledge").count() == 0
    rows = page.locator("tr.alert-row")
    assert [rows.nth(i).get_attribute("data-alert") for i in range(2)] == [
        str(alerts["regression"].pk), str(failed.pk),
    ]  # fmt: skip
    assert nav.get_by_role("link", name="Alerts 1").is_visible()
    assert Alert.objects.get(pk=failed.pk).state == "acknowledged"
    screenshot("after")
    # Its runs and its chart are one click away.
    row.get_by_role("link", name=f"run #{failed.runs.get().pk}").click()
    page.wait_for_url(f"{live_server.url}/runs/{failed.runs.get().pk}/")
    assert page.js_errors == []


def test_a_regression_marked_expected_on_its_page_becomes_an_annotation_and_is_resolved(
    phone_page, live_server, alerts, screenshot
):
    page = phone_page
    log_in(page, live_server.url, "alerts", PASSWORD)
    regression = alerts["regression"]
    page.goto(f"{live_server.url}/alerts/{regression.pk}/")
    assert page.locator("#alert-summary").inner_text().startswith("Total IOPS -31 % (4,024 → 2,758 IOPS)")
    assert "Bandwidth -31 %" in page.locator("#alert-summary").inner_text()
    assert page.evaluate(STICKING_OUT) == [] and page.evaluate(UNLABELLED_CONTROLS) == []
    screenshot("regression", on=page)
    page.get_by_label("Why it is expected").fill("moved to PL2")
    page.get_by_role("button", name="Mark expected").click()
    page.wait_for_load_state("load")
    assert page.locator("#alert-state").inner_text() == "resolved"
    assert "marked expected by alerts" in page.locator("body").inner_text()
    assert set(Annotation.objects.values_list("text", "kind")) == {("moved to PL2", "expected")}
    screenshot("resolved", on=page)
    page.get_by_role("link", name="chart").click()
    page.wait_for_url(f"{live_server.url}/disks/{regression.disk_id}/#disk-charts")
    assert page.js_errors == []
