"""Importing fio --client output as a group in a real Chromium, on a phone (390 px) and a desktop (1280 px): the
clients and their disks checked, saved, and the group's page with fio's total beside benchweb's; the pages within the
screen, every control labelled, no JavaScript errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.models import Disk, Host, RunSet
from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
OUTPUT = Path(__file__).parent.parent / "fixtures" / "clients" / "fio-3.33-two-clients.json"


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_a_person_imports_two_clients_as_a_group_on_a_phone_and_a_desktop(
    request, screen, disk, credential, owner, live_server, screenshot
):
    host = Host.objects.create(team=disk.team, name="vm2", address="127.0.0.2", username="b", credential=credential)
    second = Disk.objects.create(host=host, label="data", target_path="/data/bench")
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/import/group/")
    page.get_by_label("Or paste the output").fill(OUTPUT.read_text())
    page.get_by_role("button", name="Read the output").click()
    page.wait_for_selector("#group-confirm")
    assert page.get_by_label("Disk of client 1 (127.0.0.2)").input_value() == str(second.pk)
    assert page.get_by_label("Disk of client 2 (127.0.0.1)").input_value() == str(disk.pk)
    assert "agree" in page.locator("#group-comparison").inner_text()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    screenshot("check", page)

    page.get_by_role("button", name="Save the group of 2 members").click()
    group = RunSet.objects.get()
    page.wait_for_url(f"{live_server.url}/sets/{group.pk}/")
    totals = page.locator("#group-totals").inner_text()
    assert "fio's own “All clients” total" in totals and totals.count("28.2k IOPS") == 2  # both totals
    assert_fits(page, screen)
    assert page.js_errors == []
    screenshot("group", page)
