"""Pages as a person uses them: real headless Chromium against a live server, a real worker and sshd."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from jobs.models import Disk, Membership, Run
from tests.builders import quick_profile, target_dir, team_with_host

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-password-7"


def _log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def test_signing_up_shows_the_empty_team_and_what_to_do_next(page, live_server, screenshot):
    page.goto(f"{live_server.url}/signup/")
    page.get_by_label("Username").fill("first")
    page.locator("#id_password1").fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_role("heading", name="Default team").is_visible()
    assert page.get_by_text("No hosts yet").is_visible()
    screenshot("home")
    assert page.js_errors == []


def test_run_now_shows_progress_until_the_result(fio_installed, sshd, worker, page, live_server, tmp_path, screenshot):
    team, host = team_with_host(sshd)
    User.objects.create_user("runner", password=PASSWORD)
    Membership.objects.create(user=User.objects.get(username="runner"), team=team, role="member")
    disk = Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path), disk_type="custom",
                               spec_iops=100000)  # fmt: skip
    quick_profile(team, runtime_s=6)
    _log_in(page, live_server, "runner")
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    page.locator("#id_profile").select_option(label="quick randread")
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_function(
        "document.getElementById('run-progress') && document.getElementById('run-progress').value > 0"
    )
    screenshot("progress")
    page.get_by_text("Succeeded").wait_for(timeout=60000)
    screenshot("done")
    run = Run.objects.get(disk=disk)
    assert run.state == Run.State.SUCCEEDED
    assert page.locator("#total-iops").inner_text().endswith("IOPS")
    assert page.js_errors == []
