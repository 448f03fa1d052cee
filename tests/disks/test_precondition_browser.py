"""The preconditioning parts of the disk page, the run page and the profile form in a real Chromium, on a phone
(390 px) and a desktop (1280 px): shown, labelled, within the screen, without JavaScript errors."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from jobs.disks import precondition
from jobs.models import Disk, Membership, Run
from jobs.runs.storing import stored_summary
from jobs.tools import fio
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in, wait_until
from tests.disks.preconditioning import fill_params, run_fio
from tests.factories import HostFactory, RunFactory, TeamFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-precondition-password-5"


def _fits(page, name: str) -> None:
    screen = page.viewport_size["width"]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= screen, f"{name}: the page is {width}px wide on a {screen}px screen: {page.evaluate(STICKING_OUT)}"
    assert page.evaluate(UNLABELLED_CONTROLS) == [], name
    assert page.js_errors == [], name


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_fill_the_record_and_the_warning_are_shown_on_a_phone_and_a_desktop(
    fio_installed, request, screen, live_server, screenshot, tmp_path
):
    page = request.getfixturevalue(screen)
    team = TeamFactory(name="fill team")
    user = User.objects.create_user("filler", password=PASSWORD)
    Membership.objects.create(user=user, team=team, role=Membership.Role.OWNER)
    host = HostFactory(team=team, name="vm1")
    device = Disk.objects.create(host=host, label="raw", target_path="/dev/nvme1n1", kind=Disk.Kind.BLOCK)
    fresh = RunFactory(disk=device, succeeded=True, warnings=precondition.fresh_block_warnings(device, fill_params()
                       | {"precondition": ""}))  # fmt: skip
    filled_summary = fio.parse_fio_json(run_fio(tmp_path, fill_params())).summary
    filled = RunFactory(disk=device, succeeded=True, summary=stored_summary(filled_summary))
    Run.objects.filter(pk=filled.pk).update(parameters=fill_params())
    filled.parameters = fill_params()
    precondition.note_fill(filled)
    log_in(page, live_server.url, "filler", PASSWORD)

    page.goto(f"{live_server.url}/runs/{fresh.pk}/")
    assert page.locator(".run-warning").inner_text().startswith("Warning: Fresh blocks: benchweb knows of no write")
    _fits(page, "fresh run")
    screenshot("fresh-run", page)

    page.goto(f"{live_server.url}/runs/{filled.pk}/")
    assert page.locator(".run-warning").count() == 0
    assert (
        "Preconditioned first: a sequential fill ×2 (32 MiB written in"
        in page.locator("#run-precondition").inner_text()
    )
    _fits(page, "filled run")

    page.goto(f"{live_server.url}/disks/{device.pk}/")
    shown = page.locator("#disk-precondition").inner_text()
    assert "sequential write of the whole device ×2" in shown and f"#{filled.pk}" in shown
    page.locator("#disk-precondition-form summary").click()
    page.get_by_label(re.compile(r"^How:?$")).fill("dd if=/dev/zero of=/dev/nvme1n1 bs=1M")
    _fits(page, "disk page, form open")
    screenshot("disk-form-open", page)
    page.get_by_role("button", name="Record", exact=True).click()
    page.wait_for_load_state()
    assert "dd if=/dev/zero of=/dev/nvme1n1 bs=1M" in page.locator("#disk-precondition").inner_text()
    assert "recorded by filler" in page.locator("#disk-precondition").inner_text()
    _fits(page, "disk page after recording")

    page.goto(f"{live_server.url}/profiles/new/")
    page.get_by_label("Precondition").select_option("fill")
    page.get_by_label("File size per job").fill("64M")
    wait_until(page, "document.getElementById('command-preview').textContent.includes('[precondition-')")
    _fits(page, "profile form")
    screenshot("profile-form", page)
