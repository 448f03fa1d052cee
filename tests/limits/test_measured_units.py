"""A measured throughput beside a limit reads in the limit's own unit too, with its throughput efficiency beside
the IOPS one (issue 29, item 4): on Compare, the run page, Overview, the Changes page and the expected note, the
disk chart's tooltip. Alibaba publishes ESSD PL3's 4,000 MB/s (10^6 bytes); AWS gp2's 128 MiB/s (2^20 bytes), so
a gp2 rate needs no second figure. 176 MiB/s is 184,549,376 B/s = 184.5 MB/s, 4.6 % of 4,000 MB/s."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs import limits
from jobs.models import ChangePoint, Disk, Host, Run
from jobs.teams import membership as teams
from tests.browser import log_in, wait_until
from tests.factories import RunFactory, fio_summary

PASSWORD = "a-long-units-password-29"
MIB = 2**20


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _pl3(host: Host) -> Disk:
    return Disk.objects.create(host=host, label="pl3", target_path="/pl3", disk_type="alibaba-essd-pl3", size=10000)


def _sequential(disk: Disk, mib_per_s: float = 176) -> Run:
    """A succeeded 1 MiB read run: `mib_per_s` I/Os a second move that many MiB/s."""
    return RunFactory(
        disk=disk, succeeded=True, recorded=True, profile_name="1m read",
        summary=fio_summary(read_iops=mib_per_s, block_size=MIB), limits_snapshot=disk.limits_snapshot(MIB),
    )  # fmt: skip


def test_a_measured_rate_is_given_in_the_limits_unit_beside_benchweb_s_own():
    assert limits.beside("176 MiB/s", 176 * MIB, "MB/s") == "176 MiB/s = 184.5 MB/s"
    assert limits.beside("176 MiB/s", 176 * MIB, "MiB/s") == "176 MiB/s"  # the same unit: said once
    assert limits.beside("176 MiB/s", 176 * MIB, None) == "176 MiB/s"  # no limit: nothing to stand beside
    assert limits.beside("1.2 GiB/s", 1.2 * 2**30, "MiB/s") == "1.2 GiB/s = 1,228.8 MiB/s"


def test_throughput_efficiency_is_the_measured_rate_over_the_throughput_limit_in_its_unit():
    snapshot = {"throughput_bytes_per_s": 4000 * 10**6, "total_throughput_unit": "MB/s"}
    found = limits.throughput_efficiency(176 * MIB, snapshot)
    assert found is not None and round(found.of_baseline, 2) == 4.61
    assert limits.throughput_efficiency_text(found, snapshot) == "4.6 % of 4,000 MB/s"
    gp2 = {"throughput_bytes_per_s": 128 * MIB, "burst_throughput_bytes_per_s": 250 * MIB, "throughput_unit": "MiB/s"}
    both = limits.throughput_efficiency(64 * MIB, gp2)
    assert both is not None
    assert limits.throughput_efficiency_text(both, gp2) == "50 % of baseline 128 MiB/s, 25 % of burst 250 MiB/s"
    assert limits.throughput_efficiency(176 * MIB, {"error": "no limits"}) is None


@pytest.mark.django_db
def test_compare_gives_the_bandwidth_in_the_limits_unit_and_the_throughput_efficiency(owner_client, host):
    pl3 = _pl3(host)
    first, second = _sequential(pl3), _sequential(pl3, 200)
    page = _text(owner_client.get(f"/compare/?runs={first.pk},{second.pk}").content.decode())
    assert "Bandwidth 176 MiB/s = 184.5 MB/s 200 MiB/s = 209.7 MB/s" in page
    assert "Throughput efficiency 4.6 % of 4,000 MB/s 5.2 % of 4,000 MB/s" in page


@pytest.mark.django_db
def test_a_gp2_run_s_bandwidth_is_said_once_in_mib_s_as_aws_publishes_it(owner_client, host):
    gp2 = Disk.objects.create(host=host, label="gp2", target_path="/gp2", disk_type="aws-gp2", size=500)
    first, second = _sequential(gp2, 100), _sequential(gp2, 125)
    page = _text(owner_client.get(f"/compare/?runs={first.pk},{second.pk}").content.decode())
    assert "Bandwidth 100 MiB/s 125 MiB/s" in page and "= 104.9 MB/s" not in page
    assert "Throughput efficiency 40 % of baseline 250 MiB/s" in page or "40 % of 250 MiB/s" in page


@pytest.mark.django_db
def test_the_run_page_and_overview_give_the_bandwidth_in_the_limits_unit_and_its_efficiency(owner_client, host):
    run = _sequential(_pl3(host))
    page = _text(owner_client.get(f"/runs/{run.pk}/").content.decode())
    assert "Measured bandwidth 176 MiB/s = 184.5 MB/s: 4.6 % of 4,000 MB/s (the throughput limit)." in page
    overview = _text(owner_client.get("/overview/").content.decode())
    assert "176 MiB/s = 184.5 MB/s" in overview and "throughput 4.6 % of 4,000 MB/s" in overview


def _bandwidth_change(disk: Disk) -> ChangePoint:
    run = _sequential(disk, 120)
    at = timezone.now() - timedelta(days=1)
    return ChangePoint.objects.create(
        team=disk.team, disk=disk, profile_name="1m read", metric="bandwidth", run=run, at=at,
        at_ms=int(at.timestamp() * 1000), before=176 * MIB, after=120 * MIB, change_percent=-31.8, p_value=0.0004,
        runs_before=10, runs_after=10, direction="worse",
    )  # fmt: skip


@pytest.mark.django_db
def test_a_bandwidth_change_and_its_expected_note_read_in_mib_s_and_the_limits_mb_s(owner_client, host, owner):
    change = _bandwidth_change(_pl3(host))
    page = _text(owner_client.get("/changes/").content.decode())
    assert "176 MiB/s = 184.5 MB/s → 120 MiB/s = 125.8 MB/s" in page
    assert "184,549,376" not in change.headline()  # never raw bytes per second
    note = change.mark_expected(owner)
    assert note.text == "Expected: bandwidth -32 % (176 MiB/s = 184.5 MB/s → 120 MiB/s = 125.8 MB/s) under 1m read"


def _member(username: str) -> Disk:
    user = User.objects.create_user(username, password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="vm", address="192.0.2.10", username="bench")
    return _pl3(host)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_compare_and_the_disk_chart_give_the_measured_rate_in_mb_s_in_a_browser(
    width, page, phone_page, live_server, screenshot
):
    tab = page if width == "desktop" else phone_page
    pl3 = _member(f"units-{width}")
    runs = [_sequential(pl3, mib) for mib in (176, 200, 190)]
    log_in(tab, live_server.url, f"units-{width}", PASSWORD)
    tab.goto(f"{live_server.url}/compare/?runs={','.join(str(r.pk) for r in runs)}")
    wait_until(tab, "window.Chart && Chart.getChart('compare-chart')")
    table = " ".join(tab.locator("table.side-by-side").inner_text().split())
    assert "176 MiB/s = 184.5 MB/s" in table and "4.6 % of 4,000 MB/s" in table
    # The whole table can be read: it scrolls inside its card, never past the screen's edge.
    scroller = tab.locator(".table-scroll").first
    assert scroller.evaluate("box => box.getBoundingClientRect().right <= document.documentElement.clientWidth + 1")
    assert tab.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")
    last_cell = tab.locator("table.side-by-side tr").nth(1).locator("td").last
    last_cell.scroll_into_view_if_needed()
    assert last_cell.evaluate("cell => cell.getBoundingClientRect().right <= document.documentElement.clientWidth + 1")
    screenshot(f"compare-{width}", on=tab)
    tab.goto(f"{live_server.url}/disks/{pl3.pk}/?range=all")
    wait_until(tab, "window.Chart && Chart.getChart('iops-chart')")
    lines = tab.evaluate(
        "(() => { const c = Chart.getChart('iops-chart'); const cb = c.options.plugins.tooltip.callbacks;"
        " const ds = c.data.datasets[0]; return cb.afterLabel({ dataset: ds, raw: ds.data[0], chart: c }); })()"
    )
    joined = " ".join(" ".join(lines).split())  # a phone's tooltip cuts its lines
    assert "176 MiB/s = 184.5 MB/s at 1 MiB blocks" in joined
    assert "throughput 4.6 % of 4,000 MB/s" in joined
    screenshot(f"chart-{width}", on=tab)
    assert tab.js_errors == []
