"""The Run as a group page in a real Chromium, on a phone (390 px) and a desktop (1280 px): within the screen, every
control labelled, the count of disks chosen kept as they are ticked, a refusal shown on the form, and a group
started leading to its page. No JavaScript errors."""

from __future__ import annotations

import pytest

from jobs.models import RunSet
from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in
from tests.factories import DiskFactory, HostFactory, ProfileFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_group_form_counts_the_disks_refuses_one_and_starts_two(
    request, screen, team, owner, broker, live_server, screenshot
):
    for name, labels in (("ceph-client-1", ["rbd0", "rbd1"]), ("ceph-client-2", ["rbd0"])):
        host = HostFactory(team=team, name=name)
        for label in labels:
            DiskFactory(host=host, label=label, target_path=f"/mnt/{label}")
    ProfileFactory(team=team, name="4k random read", size_bytes=2**20)
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/profiles/")
    page.get_by_role("link", name="Run as a group").click()
    page.get_by_label("Profile").select_option(label="4k random read")
    boxes = page.locator('#row-disks input[type="checkbox"]')
    boxes.nth(0).check()
    assert page.locator("#disks-chosen").inner_text() == "1 chosen"
    page.get_by_role("button", name="Start the group").click()
    page.wait_for_load_state("load")

    assert "A group has 2 to 100 members, one a disk; 1 was given" in page.locator("#row-disks").inner_text()
    assert page.locator("#disks-chosen").inner_text() == "1 chosen" and not RunSet.objects.exists()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    screenshot("refused", page)

    page.locator('#row-disks input[type="checkbox"]').nth(2).check()
    assert page.locator("#disks-chosen").inner_text() == "2 chosen"
    page.get_by_label("Backend cap (IOPS)").fill("40000")
    page.get_by_role("button", name="Start the group").click()
    page.wait_for_url(f"{live_server.url}/sets/*/")

    group = RunSet.objects.get()
    assert page.url == f"{live_server.url}/sets/{group.pk}/" and group.plan["cap_iops"] == 40000
    assert page.js_errors == []


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_group_form_starts_a_group_size_sweep_after_refusing_its_sizes(
    request, screen, team, owner, broker, live_server, screenshot
):
    for name in ("ceph-client-1", "ceph-client-2", "ceph-client-3"):
        DiskFactory(host=HostFactory(team=team, name=name), label="rbd0", target_path="/mnt/rbd0")
    ProfileFactory(team=team, name="4k random read", size_bytes=2**20)
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, "olga", "a-long-test-password-1")

    page.goto(f"{live_server.url}/sets/group/new/")
    page.get_by_label("Profile").select_option(label="4k random read")
    for box in page.locator('#row-disks input[type="checkbox"]').all():
        box.check()
    page.get_by_label("As a group-size sweep").check()
    assert page.locator("#group-start").inner_text() == "Start the group-size sweep"
    page.get_by_label("Group sizes").fill("1,2")
    page.get_by_role("button", name="Start the group-size sweep").click()
    page.wait_for_load_state("load")

    assert "The last group size is the number of disks given (3), not 2" in page.locator("#row-sizes").inner_text()
    assert page.get_by_label("As a group-size sweep").is_checked() and not RunSet.objects.exists()
    assert page.locator("#disks-chosen").inner_text() == "3 chosen"
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert_fits(page, screen)
    screenshot("sizes-refused", page)

    page.get_by_label("Group sizes").fill("1,3")
    page.get_by_role("button", name="Start the group-size sweep").click()
    page.wait_for_url(f"{live_server.url}/sets/*/")

    sweep = RunSet.objects.get()
    assert page.url == f"{live_server.url}/sets/{sweep.pk}/" and sweep.plan["sizes"] == [1, 3]
    assert page.js_errors == []
