"""The whole first day, as a person does it in the browser: sign up, register a host through its form, approve
its key, test the connection, add disks with a spec, run the quick check and watch it finish, read the disk's
chart against its limit, compare two disks and import a fio result. Real Chromium, sshd, Celery worker and fio.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobs.models import Disk, Run
from tests.browser import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-e2e-password-5"
QUICK_CHECK = "Quick check: 4k randread QD16, 10 s"
IMPORTED = Path(__file__).parent.parent / "fixtures" / "fio-3.33-randread-jsonplus.json"

# The disk chart as Chart.js holds it: points per dataset and the horizontal limit lines (annotations).
IOPS_CHART = """() => {
  const chart = Chart.getChart("iops-chart");
  if (!chart) return null;
  const lines = Object.values(chart.options.plugins.annotation.annotations || {});
  return {
    points: chart.data.datasets.map((d) => d.data.filter((p) => p.y > 0).length),
    limits: lines.filter((l) => l.type === "line").map((l) => ({ value: l.yMin, label: l.label.content })),
    drawn: chart.chartArea.right - chart.chartArea.left > 100,
  };
}"""


def test_a_person_goes_from_sign_up_to_charts_comparison_and_import(
    fio_installed, sshd, worker, page, live_server, tmp_path, screenshot
):
    url = live_server.url
    shown = 0

    def step(name: str) -> None:
        nonlocal shown
        shown += 1
        screenshot(f"{shown:02d}-{name}")
        assert page.js_errors == [], f"JavaScript errors by step {name}: {page.js_errors}"

    # Sign up: the first account owns the default team.
    page.goto(f"{url}/signup/")
    page.get_by_label("Username").fill("first")
    page.locator("#id_password1").fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{url}/")
    assert page.get_by_role("heading", name="Default team").is_visible()
    step("signed-up")

    # Register the host, with a new private-key credential typed into the host form.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Hosts").click()
    page.get_by_role("link", name="Register a host").first.click()
    page.wait_for_url(f"{url}/hosts/new/")
    page.locator("#id_name").fill("loopback")
    page.get_by_label("Address").fill(sshd.address)
    page.get_by_label("Port").fill(str(sshd.port))
    page.get_by_label("User name").fill(sshd.username)
    page.get_by_label("Add a new credential").check()
    page.get_by_label("Private key").fill(sshd.private_key)
    page.get_by_label("Run directory").fill(str(tmp_path / "runs"))
    step("host-form")
    page.get_by_role("button", name="Register host").click()
    page.wait_for_url(re.compile(r"/hosts/\d+/$"))
    host_url = page.url
    assert page.get_by_text("Next: scan its host key").is_visible()

    # Scan the key, compare the fingerprint with the server's own, approve it.
    page.get_by_role("button", name="Scan host key").click()
    scanned = page.locator("#scanned-fingerprint")
    scanned.wait_for()
    own = {key.fingerprint for key in sshd.handle.host_keys.values()}
    assert scanned.inner_text() in own
    step("key-scanned")
    page.get_by_role("button", name="Approve this key").click()
    page.locator("#pinned-fingerprint").wait_for()
    assert page.locator("#pinned-fingerprint").inner_text() in own
    assert page.locator("#scanned-fingerprint").count() == 0
    step("key-approved")

    # Test the connection: logs in with the stored key and finds fio.
    page.get_by_role("link", name="Test connection").click()
    page.get_by_role("button", name="Test connection").click()
    assert "fio is installed" in page.locator("#test-message").inner_text(), page.locator("main").inner_text()
    step("connection-tested")

    # Two directory disks with specs: 100 GiB Alibaba Ultra (2,600 IOPS) and 200 GiB AWS gp2 (600 IOPS).
    disk_urls = {}
    for label, disk_type, size, limit_text in [
        ("ultra", "alibaba-ultra", "100", "2,600 IOPS"),
        ("gp2", "aws-gp2", "200", "600 IOPS"),
    ]:
        (tmp_path / label).mkdir()
        page.goto(host_url)
        page.get_by_role("link", name="Add disk").click()
        page.get_by_label("Label").fill(label)
        page.get_by_label("Target path").fill(str(tmp_path / label))
        page.get_by_label("Disk type").select_option(disk_type)
        page.get_by_label("Size").fill(size)
        page.get_by_text(limit_text).first.wait_for()  # the live preview of the limits
        step(f"disk-form-{label}")
        page.get_by_role("button", name="Add disk").click()
        # The disk page writes its chart filters into the query string as it loads.
        page.wait_for_url(re.compile(r"/disks/\d+/(\?.*)?$"))
        disk_urls[label] = page.url.split("?")[0]
        assert page.get_by_text(limit_text).first.is_visible()
    ultra = Disk.objects.get(label="ultra")
    theoretical = ultra.limits(block_size=4096)
    assert theoretical.effective_iops == theoretical.iops == 2600

    # Start the quick check on the second disk, then on the first, and watch the first one to the end.
    page.goto(disk_urls["gp2"])
    page.locator("#id_profile").select_option(label=QUICK_CHECK)
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    gp2_run_url = page.url
    page.goto(disk_urls["ultra"])
    page.locator("#id_profile").select_option(label=QUICK_CHECK)
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.evaluate("window.stillTheSamePage = true")
    wait_until(page, "document.getElementById('run-progress').value > 0", timeout_s=60)
    assert page.locator("#run-progress").is_visible()
    step("run-progress")
    wait_until(page, "document.getElementById('run-progress').value === 100", timeout_s=60)
    page.locator("#total-iops").wait_for(timeout=15000)
    wait_until(page, "window.Chart && Chart.getChart('run-iops-chart')")
    assert page.evaluate("window.stillTheSamePage") is True, "the page reloaded instead of showing the result"
    assert page.locator("#run-state").inner_text() == "Succeeded"
    assert page.locator("#run-progress").is_visible()
    # As fio's JSON wrote it, with thousands separators: "19,448.517161 IOPS", never "19.4k IOPS".
    assert re.fullmatch(r"[\d,]+(\.\d+)? IOPS", page.locator("#total-iops").inner_text())
    step("run-finished")
    run = Run.objects.get(disk=ultra)
    assert run.state == Run.State.SUCCEEDED and run.summary["total"]["iops"] > 0

    # The disk page: IOPS over time with the theoretical limit line.
    page.get_by_role("link", name="loopback:ultra").click()
    page.wait_for_url(re.compile(re.escape(disk_urls["ultra"]) + r"(\?.*)?$"))
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    chart = page.evaluate(IOPS_CHART)
    assert chart["drawn"]
    assert chart["points"] and all(n >= 1 for n in chart["points"]), chart
    assert [line["value"] for line in chart["limits"]] == [2600], chart
    assert "2,600" in chart["limits"][0]["label"]
    assert page.evaluate("typeof window.Hammer") == "function"
    step("disk-chart")

    # Compare the two disks once the second run has finished too.
    page.goto(gp2_run_url)
    page.locator("#run-state", has_text="Succeeded").wait_for(timeout=60000)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Compare").click()
    page.get_by_label("ultra on loopback").check()
    page.get_by_label("gp2 on loopback").check()
    page.get_by_role("button", name="Compare disks").click()
    wait_until(page, "window.Chart && Chart.getChart('compare-chart')")
    group = page.locator("section", has=page.get_by_role("heading", name=QUICK_CHECK))
    columns = group.locator("thead th a").all_inner_texts()
    measured = group.get_by_role("row", name=re.compile("^Measured IOPS")).get_by_role("cell").all_inner_texts()
    limits = group.get_by_role("row", name=re.compile("^Theoretical IOPS")).get_by_role("cell").all_inner_texts()
    assert sorted(columns) == ["gp2", "ultra"]
    assert all(cell.endswith("IOPS") for cell in measured) and len(measured) == 2, measured
    assert dict(zip(columns, limits, strict=True)) == {"ultra": "2,600 IOPS", "gp2": "600 IOPS"}
    bars = page.evaluate("Chart.getChart('compare-chart').data.datasets.map((d) => d.data[0])")
    expected_limits = [{"ultra": 2600, "gp2": 600}[column] for column in columns]
    assert bars[1::2] == expected_limits and all(value > 0 for value in bars[0::2]), bars
    step("compare")

    # Import a real fio JSON onto the second disk: the numbers first, stored only on Save.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Import").click()
    page.get_by_label("Disk").select_option(label="loopback:gp2")
    page.get_by_label("Files").set_input_files(str(IMPORTED))
    page.get_by_role("button", name="Read the numbers").click()
    preview = page.locator("#import-preview")
    preview.wait_for()
    expected_iops = json.loads(IMPORTED.read_text())["jobs"][0]["read"]["iops"]
    # As fio's JSON wrote the read IOPS, digit for digit, with thousands separators.
    written = re.search(r'"read" : \{.*?"iops" : ([0-9.]+)', IMPORTED.read_text(), re.S)[1]
    whole, _, fraction = written.partition(".")
    assert f"{int(whole):,}.{fraction} IOPS" in preview.inner_text()
    assert Run.objects.filter(trigger=Run.Trigger.IMPORT).count() == 0
    step("import-check")
    page.get_by_role("button", name="Save 1 result").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert page.get_by_text("Imported 1 result onto").is_visible()
    imported = Run.objects.get(trigger=Run.Trigger.IMPORT)
    assert imported.disk.label == "gp2" and imported.state == Run.State.SUCCEEDED
    assert imported.summary["total"]["iops"] == pytest.approx(expected_iops)
    step("imported")
