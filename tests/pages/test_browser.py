"""Pages as a person uses them: real headless Chromium against a live server, a real worker and sshd."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.imports import importing
from jobs.models import Disk, Host, Membership, Run
from jobs.teams import membership as teams
from tests.browser import log_in, wait_until
from tests.builders import quick_profile, rerun_of, target_dir, team_with_host

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-password-7"
FIXTURES = Path(__file__).parent.parent / "fixtures"


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
    log_in(page, live_server.url, "runner", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    page.locator("#id_profile").select_option(label="quick randread")
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    wait_until(page, "document.getElementById('run-progress').value > 0", timeout_s=60)
    screenshot("progress")
    wait_until(page, "document.getElementById('status').dataset.final === '1'", timeout_s=60)
    screenshot("done")
    run = Run.objects.get(disk=disk)
    assert page.locator("#run-state").inner_text() == "Succeeded", run.explanation
    assert run.state == Run.State.SUCCEEDED
    assert page.locator("#total-iops").inner_text().endswith("IOPS")
    assert page.js_errors == []


def _disk_with_imported_runs(username: str) -> Disk:
    user = User.objects.create_user(username, password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="vm", address="192.0.2.10", username="bench")
    disk = Disk.objects.create(host=host, label="data", target_path="/data", disk_type="alibaba-ultra", size=100)
    text = (FIXTURES / "fio-3.33-randread-jsonplus.json").read_text()
    for hours in (30, 20, 10, 2):
        at = timezone.now() - timedelta(hours=hours)
        importing.import_result(disk, rerun_of(text, hours * 3600), name="randread.json", at=at)
    return disk


def test_the_disk_chart_pinch_zooms_on_a_touch_screen(phone_page, live_server, screenshot):
    page = phone_page
    disk = _disk_with_imported_runs("pincher")
    log_in(page, live_server.url, "pincher", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    assert page.evaluate("typeof window.Hammer") == "function"
    span = "(() => { const x = Chart.getChart('iops-chart').scales.x; return x.max - x.min; })()"
    before = page.evaluate(span)
    page.locator("#iops-chart").scroll_into_view_if_needed()
    box = page.locator("#iops-chart").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    # Two fingers spreading apart over the chart, as raw touch events (Playwright has no pinch of its own).
    cdp = page.context.new_cdp_session(page)

    def touch(kind: str, spread: float) -> None:
        points = (
            [] if kind == "touchEnd" else [{"x": cx - spread, "y": cy, "id": 0}, {"x": cx + spread, "y": cy, "id": 1}]
        )
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", 20)
    for spread in range(30, 130, 10):
        touch("touchMove", spread)
    touch("touchEnd", 0)
    wait_until(page, f"{span} < {before} * 0.8")  # zoomed in: the time axis spans less
    screenshot("pinched", on=page)
    assert page.js_errors == []


def test_shift_drag_still_pans_the_disk_chart_with_a_mouse(page, live_server):
    disk = _disk_with_imported_runs("panner")
    log_in(page, live_server.url, "panner", PASSWORD)
    page.goto(f"{live_server.url}/disks/{disk.pk}/?range=all")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    page.get_by_role("button", name="Zoom in").click()
    low = "Chart.getChart('iops-chart').scales.x.min"
    before = page.evaluate(low)
    page.locator("#iops-chart").scroll_into_view_if_needed()
    box = page.locator("#iops-chart").bounding_box()
    y = box["y"] + box["height"] / 2
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(box["x"] + box["width"] * (0.3 + 0.04 * step), y)
    page.mouse.up()
    page.keyboard.up("Shift")
    wait_until(page, f"{low} < {before}")  # dragged right: earlier runs come into view
    assert page.js_errors == []


def test_only_hammerjs_built_file_is_served_not_its_sources_or_test_pages(client):
    assert client.get("/static/vendor/hammerjs/hammer.min.js").status_code == 200
    for path in ("tests/manual/compute_touch_action.html", "src/hammer.js", "package.json", "hammer.js"):
        assert client.get(f"/static/vendor/hammerjs/{path}").status_code == 404, path
