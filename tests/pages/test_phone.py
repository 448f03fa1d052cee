"""The main pages on a phone (390 x 844): nothing wider than the screen, the navigation reachable, every form
control labelled, no JavaScript errors. The same pages at 1280 x 800 must not overflow either."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.alerts import evaluate
from jobs.imports import importing
from jobs.models import (
    Alert,
    AlertChannel,
    Credential,
    Delivery,
    Disk,
    Host,
    Profile,
    Run,
    Schedule,
    ScheduleProfile,
    ShareLink,
)  # fmt: skip
from jobs.notify.channels import ChannelInput, save_channel
from jobs.teams import membership as teams
from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in, settle
from tests.builders import rerun_of
from tests.factories import RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-phone-password-3"
FIXTURES = Path(__file__).parent.parent / "fixtures"
NAV = ["Overview", "Hosts", "Profiles", "Schedules", "Calendar", "Compare", "Alerts", "Changes", "Import", "Disk types"]


def _import(disk: Disk, fixture: str, hours_ago: float) -> Run:
    text = rerun_of((FIXTURES / fixture).read_text(), round(hours_ago * 3600))
    return importing.import_result(disk, text, name=fixture, at=timezone.now() - timedelta(hours=hours_ago))


@pytest.fixture
def site(db) -> dict[str, str]:
    """A team as it looks after a few days of use: a host, two disks with results, a schedule."""
    user = User.objects.create_user("phone", password=PASSWORD)
    team = teams.place_new_user(user).team
    credential = Credential(team=team, name="bench login", kind=Credential.Kind.PASSWORD)
    credential.set_secret("not-used-by-these-tests")
    credential.save()
    host = Host.objects.create(
        team=team, name="db-primary-eu-west-1", address="db-primary.eu-west-1.example.internal", port=22,
        username="benchmark", credential=credential, host_key_type="ssh-ed25519", host_key_b64="AAAA",
        host_key_fingerprint="SHA256:Xq3xg0P2mnNk8W1cGmLbd0p5mB2r1yV7xkq9TqS9n5Y", host_key_approved_at=timezone.now(),
    )  # fmt: skip
    ultra = Disk.objects.create(host=host, label="ultra-stripe", target_path="/srv/benchweb/ultra-stripe-target",
                                disk_type="alibaba-ultra", size=400, stripes=8)  # fmt: skip
    gp2 = Disk.objects.create(host=host, label="gp2-data", target_path="/srv/benchweb/gp2", disk_type="aws-gp2",
                              size=200)  # fmt: skip
    for i, fixture in enumerate(["fio-3.33-randrw.json", "fio-3.33-randrw-status-interval.json"] * 2):
        run = _import(ultra, fixture, hours_ago=30 - 6 * i)
    _import(gp2, "fio-3.33-randrw.json", hours_ago=5)
    histogram_run = _import(gp2, "fio-3.33-randread-jsonplus.json", hours_ago=2)
    preset = Profile.objects.filter(team__isnull=True).first()
    schedule = Schedule.objects.create(team=team, name="nightly randread on both disks", cron="30 2 * * *",
                                       timezone="Europe/Berlin", stagger_s=600)  # fmt: skip
    schedule.targets.set([ultra, gp2])
    ScheduleProfile.objects.create(schedule=schedule, profile=preset, position=0)
    failed = RunFactory(
        disk=ultra, profile=preset, state=Run.State.FAILED, finished_at=timezone.now(),
        explanation="refused, nothing was written: the target directory /srv/benchweb/ultra-stripe-target is missing",
    )  # fmt: skip
    evaluate.run_finished(failed.pk)
    evaluate.host_key_refused(host, "SHA256:9p3Lr0c1x5xk0P2mnNk8W1cGmLbd0p5mB2r1yV7xkq9", "run 12")
    alert = Alert.objects.get(kind=Alert.Kind.RUN_FAILED)
    ShareLink.issue(team=team, user=user, days=7, disk=ultra)
    hook = _dead_channel(team, user)
    return {
        "home": "/",
        "overview": "/overview/",
        "hosts": "/hosts/",
        "host": f"/hosts/{host.pk}/",
        "host form": f"/hosts/{host.pk}/edit/",
        "disk": f"/disks/{ultra.pk}/?range=all",
        "disk form": f"/disks/{ultra.pk}/edit/",
        "run": f"/runs/{run.pk}/",
        "run histogram": f"/runs/{histogram_run.pk}/",
        "schedules": "/schedules/",
        "schedule form": "/schedules/new/",
        "calendar": "/schedules/calendar/",
        "compare": f"/compare/?disks={ultra.pk},{gp2.pk}",
        "runs": "/runs/",
        "compliance report": f"/disks/{ultra.pk}/report/?period=all&runs=all",
        "comparison report": f"/compare/report/?disks={ultra.pk},{gp2.pk}",
        "changes": "/changes/",
        "alerts": "/alerts/",
        "alert": f"/alerts/{alert.pk}/",
        "alert rules": "/alerts/rules/",
        "import": f"/import/?disk={gp2.pk}",
        "profiles": "/profiles/",
        "profile form": "/profiles/new/",
        "group form": "/sets/group/new/",
        "disk types": "/disk-types/",
        "share links": "/shares/",
        "channels": "/channels/",
        "channel": f"/channels/{hook.pk}/",
    }


def _dead_channel(team, user) -> AlertChannel:
    """A webhook that stopped answering (dead, a long error) beside a working e-mail channel, with a log."""
    save_channel(None, ChannelInput(kind="email", addresses=["storage-oncall@example.com"]), team=team, user=user)
    hook, _ = save_channel(None, ChannelInput(kind="webhook", name="pagerduty bridge in eu-west-1",
                                              url="https://hooks.eu-west-1.example.internal/benchweb/alerts/incoming"),
                           team=team, user=user)  # fmt: skip
    error = "Could not reach the webhook: HTTPSConnectionPool(host='hooks.eu-west-1.example.internal', port=443): " * 2
    AlertChannel.objects.filter(pk=hook.pk).update(failures_in_a_row=5, last_error=error, last_failed_at=timezone.now())
    event = {"event": "opened", "alert": {"kind": "run_failed", "title": "run 41 of 4k randread on gp2-data failed"}}
    Delivery.objects.create(channel=hook, event=event, summary="OPEN run failed: run 41 of 4k randread on gp2-data "
                            "failed", state=Delivery.State.GAVE_UP, attempts=5, error=error)  # fmt: skip
    Delivery.objects.create(channel=hook, event=event, summary="OPEN test: test of channel pagerduty bridge",
                            state=Delivery.State.SENT, attempts=1, response="HTTP 200",
                            sent_at=timezone.now())  # fmt: skip
    return hook


PAGES = ["home", "overview", "hosts", "host", "host form", "disk", "disk form", "run", "run histogram", "schedules",
         "schedule form", "calendar", "compare", "compliance report", "comparison report", "import", "profiles",
         "profile form", "group form", "runs", "disk types", "alerts", "alert", "alert rules", "share links",
         "channels", "channel"]  # fmt: skip


def test_every_main_page_fits_a_phone_screen_with_labelled_controls(site, phone_page, live_server, screenshot):
    page = phone_page
    log_in(page, live_server.url, "phone", PASSWORD)
    problems = []
    for name in PAGES:
        page.goto(live_server.url + site[name])
        settle(page)
        screenshot(name.replace(" ", "-"), on=page)
        try:
            assert_fits(page, name)
        except AssertionError as exc:
            problems.append(str(exc))
        unlabelled = page.evaluate(UNLABELLED_CONTROLS)
        if unlabelled:
            problems.append(f"{name}: controls without a label: {unlabelled}")
        # Two forms on one page with the same field names must not share ids (a label then names only one).
        twice = page.evaluate(
            "() => { const seen = {}; for (const el of document.querySelectorAll('[id]')) seen[el.id] = (seen[el.id] "
            "|| 0) + 1; return Object.keys(seen).filter((id) => seen[id] > 1); }"
        )
        if twice:
            problems.append(f"{name}: ids used twice: {twice}")
    assert not problems, "\n".join(problems)
    assert page.js_errors == []


def test_the_navigation_is_reachable_on_a_phone(site, phone_page, live_server, screenshot):
    page = phone_page
    log_in(page, live_server.url, "phone", PASSWORD)
    page.goto(live_server.url + site["disk"])
    nav = page.get_by_role("navigation", name="Main")
    for label in NAV:
        # The Alerts link carries the number of open alerts (two here).
        link = nav.get_by_role("link", name=re.compile(rf"^{label}( \d+)?$"))
        if not link.is_visible():
            page.get_by_role("button", name="Menu").click()
        link.wait_for(state="visible")
        box = link.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (label, box)
    screenshot("menu", on=page)
    nav.get_by_role("link", name="Schedules", exact=True).click()
    page.wait_for_url(f"{live_server.url}/schedules/")
    assert page.js_errors == []


# The pages whose desktop screenshot is kept for a person to look at.
SHOWN = ("disk", "compare", "run", "schedules", "profiles", "calendar", "runs", "comparison report", "alerts", "alert",
         "alert rules", "channels", "channel")  # fmt: skip


def test_the_main_pages_still_fit_a_desktop_screen(site, page, live_server, screenshot):
    log_in(page, live_server.url, "phone", PASSWORD)
    for name in PAGES:
        page.goto(live_server.url + site[name])
        settle(page)
        assert_fits(page, name)
        if name in SHOWN:
            screenshot(name)
    nav = page.get_by_role("navigation", name="Main")
    assert all(nav.get_by_role("link", name=re.compile(rf"^{label}( \d+)?$")).is_visible() for label in NAV)
    assert page.js_errors == []


def test_the_latency_table_shows_every_percentile_on_a_phone_without_scrolling(site, phone_page, live_server):
    """Each direction's row folds into labelled cells on a phone: p99.9 and max are on the screen, not behind a
    sideways scroll."""
    page = phone_page
    log_in(page, live_server.url, "phone", PASSWORD)
    page.goto(live_server.url + site["run"])
    settle(page)
    table = page.locator("table.latency-table")
    for label in ("p99.9", "max"):
        cell = table.locator(f'td[data-label="{label}"]').first
        box = cell.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (label, box)
    assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth")
    assert page.js_errors == []
