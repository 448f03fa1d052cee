"""The first steps in a real Chromium at desktop and phone width: the Run now choice, copying a profile and
cancelling, the 404 page and the home page's next step."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from jobs import presets
from jobs.models import Disk, Host, Membership, Profile, Run
from jobs.teams import membership as teams
from tests.browser import log_in, wait_until
from tests.builders import target_dir, team_with_host
from tests.factories import RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-password-8"
ESSD = "ESSD PL3: 4k randwrite numjobs=10 QD128"


def _owner_with_disk(username: str) -> Disk:
    user = User.objects.create_user(username, password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="vm", address="192.0.2.10", username="bench",
                               host_key_b64="AAAAC3NzaC1lZDI1NTE5", host_key_fingerprint="SHA256:approved")  # fmt: skip
    return Disk.objects.create(host=host, label="data", target_path="/data/bench", disk_type="custom")


def _fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def _check_run_now_form(page, disk: Disk) -> None:
    quick = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    essd = Profile.objects.get(builtin=True, name=ESSD)
    select = page.locator("#id_profile")
    assert select.input_value() == str(quick.pk)
    raw = page.locator(f"#id_profile option[value='{essd.pk}']")
    assert raw.is_disabled() and raw.inner_text().endswith("cannot run here: raw device only")
    refused = page.locator("#run-now-refused")
    # The ESSD preset, and the built-in sweeps that run on a whole device (no file size) too.
    raw_only = [p.name for p in Profile.objects.filter(builtin=True) if disk.refusal_for(p) is not None]
    assert ESSD in raw_only and all(name == ESSD or Profile.objects.get(name=name).is_set for name in raw_only)
    cannot = f"{len(raw_only)} profile{'s' if len(raw_only) > 1 else ''} cannot run on this disk"
    assert refused.locator("summary").inner_text().startswith(cannot)
    refused.locator("summary").click()
    assert f"{ESSD}: it has no file size, so it runs on a whole block device only" in refused.inner_text()
    assert page.get_by_role("button", name="Run now").is_enabled()


def test_run_now_starts_on_a_runnable_profile_and_the_default_run_succeeds_in_a_directory(
    fio_installed, sshd, worker, page, live_server, tmp_path, screenshot
):
    team, host = team_with_host(sshd)
    user = User.objects.create_user("runner", password=PASSWORD)
    Membership.objects.create(user=user, team=team, role="member")
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom")
    log_in(page, live_server.url, "runner", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    _check_run_now_form(page, disk)
    page.locator("#runnow").scroll_into_view_if_needed()
    screenshot("form")
    page.get_by_role("button", name="Run now").click()  # the preselected profile, untouched
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    wait_until(page, "document.getElementById('status').dataset.final === '1'", timeout_s=90)
    run = Run.objects.get(disk=disk)
    assert run.profile_name == presets.QUICK_CHECK
    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert page.locator("#run-state").inner_text() == "Succeeded"
    screenshot("done")
    assert page.js_errors == []


def test_run_now_on_a_phone_greys_out_what_cannot_run_and_fits_the_screen(phone_page, live_server, screenshot):
    page = phone_page
    disk = _owner_with_disk("phoner")
    log_in(page, live_server.url, "phoner", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    _check_run_now_form(page, disk)
    assert _fits_the_width(page)
    page.locator("#runnow").scroll_into_view_if_needed()
    screenshot("form", on=page)
    assert page.js_errors == []


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_copying_a_profile_and_cancelling_leaves_nothing_and_save_keeps_it(
    width, page, phone_page, live_server, screenshot
):
    page = page if width == "desktop" else phone_page
    disk = _owner_with_disk(f"copier-{width}")
    preset = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    log_in(page, live_server.url, f"copier-{width}", PASSWORD)
    page.goto(f"{live_server.url}/profiles/")
    page.get_by_role("link", name=f"Copy {presets.QUICK_CHECK}", exact=True).click()
    page.wait_for_url(f"{live_server.url}/profiles/{preset.pk}/copy/")
    assert page.get_by_label("Name").input_value() == f"{presets.QUICK_CHECK} (copy)"
    assert page.locator("#copy-note").is_visible()
    assert _fits_the_width(page)
    screenshot("form", on=page)
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{live_server.url}/profiles/{preset.pk}/")
    assert not Profile.objects.filter(team=disk.team).exists()
    page.get_by_role("link", name="Copy into my team").click()
    page.get_by_label("Name").fill("my quick check")
    page.get_by_role("button", name="Save profile").click()
    page.wait_for_url(re.compile(r"/profiles/\d+/$"))
    copy = Profile.objects.get(team=disk.team)
    assert copy.name == "my quick check" and copy.parameters() == preset.parameters()
    assert page.js_errors == []


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_404_page_has_the_layout_and_a_way_on(width, page, phone_page, live_server, screenshot):
    page = page if width == "desktop" else phone_page
    _owner_with_disk(f"lost-{width}")
    log_in(page, live_server.url, f"lost-{width}", PASSWORD)
    response = page.goto(f"{live_server.url}/disks/999999/")
    assert response.status == 404
    assert page.get_by_role("heading", name="Page not found").is_visible()
    assert page.locator("header.topbar .brand").is_visible()
    if width == "phone":
        assert page.get_by_role("button", name="Menu").is_visible()
    else:
        assert page.get_by_role("navigation", name="Main").is_visible()
    assert _fits_the_width(page)
    screenshot("404", on=page)
    page.get_by_role("link", name="your team's start page").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.js_errors == [] or all("404" in e for e in page.js_errors)


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_home_page_offers_the_quick_check_until_the_first_run(width, page, phone_page, live_server, screenshot):
    page = page if width == "desktop" else phone_page
    disk = _owner_with_disk(f"newcomer-{width}")
    log_in(page, live_server.url, f"newcomer-{width}", PASSWORD)
    button = page.get_by_role("button", name=f"Run the quick check on {disk}")
    assert page.get_by_role("heading", name="No runs yet").is_visible() and button.is_visible()
    assert _fits_the_width(page)
    screenshot("hint", on=page)
    RunFactory(disk=disk, profile_name="imported", trigger=Run.Trigger.IMPORT, state=Run.State.SUCCEEDED)
    page.reload()
    assert page.locator("#next-step").count() == 0
    assert page.js_errors == []
