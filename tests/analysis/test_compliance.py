"""Promise compliance and stability (issue 17) on constructed histories whose truth is known, through the API and
its schema, on the disk and run pages, and on real fio runs over SSH."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from jobs.analysis import stability
from jobs.api.models import ApiToken
from jobs.models import Disk, Host, Run, RunResult, RunSample
from jobs.results import compliance
from jobs.results import stability as disk_stability
from jobs.runs import queueing
from jobs.shares import sharing
from tests.analysis.histories import NOW, measured
from tests.browser import UNLABELLED_CONTROLS, assert_fits, log_in, settle
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.openapi import schema


def answer(disk: Disk, now: datetime = NOW, **params: str) -> dict:
    return compliance.disk_compliance(disk, compliance.parse(params, now=now))


# ----------------------------------------------------------------------------- compliance


def test_5_of_20_runs_at_half_a_4000_iops_promise_are_a_quarter_below_it(disk):
    for night in range(20):
        measured(disk, at=NOW - timedelta(days=20 - night), iops=2000.0 if night % 4 == 0 else 4010.0)
    found = answer(disk)
    assert (found["runs"], found["below"], found["below_share"]) == (20, 5, 0.25)
    assert found["no_promise"] == 0 and found["limit"]["iops"] == 4000


def test_the_tolerance_moves_the_line_a_run_must_reach(disk):
    for night, iops in enumerate([3900.0, 3700.0, 3500.0, 4000.0]):
        measured(disk, at=NOW - timedelta(days=4 - night), iops=iops)
    # 95 % of 4,000 is 3,800: two misses; 10 % below (3,600): one; 0 %: three.
    assert answer(disk)["below"] == 2
    assert answer(disk, tolerance="10")["below"] == 1
    assert answer(disk, tolerance="0")["below"] == 3
    assert answer(disk, tolerance="10")["threshold_percent"] == 90


def test_runs_with_a_verdict_can_be_left_out_whole_days_too(disk):
    # Twenty nights, every fourth at half the promise and judged client-bound: the misses were not the disk's.
    for night in range(20):
        half = night % 4 == 0
        run = measured(disk, at=NOW - timedelta(days=20 - night), iops=2000.0 if half else 4010.0)
        RunResult.objects.filter(run=run).update(measured_disk=not half, verdict_kinds="client_bound" if half else "")
    every, disk_only = answer(disk), answer(disk, measured="disk")
    assert (every["runs"], every["below"]) == (20, 5) and every["measured"] == "all"
    assert (disk_only["runs"], disk_only["below"], disk_only["below_share"]) == (15, 0, 0.0)
    assert disk_only["measured"] == "disk"
    with pytest.raises(compliance.BadRequest, match="measured is 'disk'"):
        answer(disk, measured="mine")


def test_the_period_keeps_only_its_runs(disk):
    measured(disk, at=NOW - timedelta(days=3), iops=1000.0)
    measured(disk, at=NOW - timedelta(days=20), iops=1000.0)
    measured(disk, at=NOW - timedelta(days=60), iops=4000.0)
    assert answer(disk, period="7d")["runs"] == 1
    assert answer(disk)["runs"] == 2  # 30 days unless asked
    assert answer(disk, period="all")["below_share"] == pytest.approx(2 / 3)
    custom = answer(disk, since="2026-09-01", until="2026-11-10")
    assert (custom["period"], custom["runs"], custom["below"]) == ("custom", 2, 1)


def test_runs_without_a_promise_are_counted_apart(host):
    bare = Disk.objects.create(host=host, label="bare", target_path="/data/bare", disk_type="custom")
    measured(bare, at=NOW - timedelta(days=1), iops=100.0)
    found = answer(bare)
    assert (found["runs"], found["no_promise"], found["below_share"], found["limit"]) == (0, 1, None, None)


def test_per_second_samples_below_the_promise_are_shared_over_every_sampled_second(disk):
    measured(disk, at=NOW - timedelta(days=2), iops=3000.0, seconds=[4000.0] * 6 + [2000.0] * 4)
    measured(disk, at=NOW - timedelta(days=1), iops=4000.0, seconds=[4000.0] * 9 + [3000.0])
    seconds = answer(disk)["seconds"]
    assert (seconds["seconds"], seconds["below"], seconds["runs"]) == (20, 5, 2)
    assert seconds["below_share"] == 0.25


def test_the_worst_hour_is_the_one_with_the_lowest_mean_efficiency(disk):
    for day in range(1, 8):
        midnight = datetime(2026, 11, 25, tzinfo=UTC) - timedelta(days=day)
        measured(disk, at=midnight + timedelta(hours=1), iops=4000.0)
        measured(disk, at=midnight + timedelta(hours=3), iops=2400.0 + 100 * day)
        measured(disk, at=midnight + timedelta(hours=14), iops=3600.0)
    worst = answer(disk)["worst_hour"]
    assert (worst["hour"], worst["zone"], worst["runs"]) == (3, "UTC", 7)
    assert worst["mean_efficiency"] == pytest.approx((2400 + 100 * 4) / 4000)


def test_the_longest_streak_of_misses_is_counted_in_time_order(disk):
    pattern = "ok miss miss ok miss miss miss miss ok miss".split()
    runs = [
        measured(disk, at=NOW - timedelta(days=10 - i), iops=1000.0 if kind == "miss" else 4000.0)
        for i, kind in enumerate(pattern)
    ]
    streak = answer(disk)["longest_streak"]
    assert streak["runs"] == 4
    assert streak["from"] == runs[4].finished_at.isoformat().replace("+00:00", "Z")
    assert streak["to"] == runs[7].finished_at.isoformat().replace("+00:00", "Z")


def test_a_profile_is_judged_alone_and_each_profile_is_listed(disk):
    measured(disk, at=NOW - timedelta(days=2), iops=1000.0, profile_name="randread")
    measured(disk, at=NOW - timedelta(days=1), iops=4000.0, profile_name="seqread")
    assert answer(disk, profile="seqread")["below_share"] == 0
    listed = {row["profile"]: row["below_share"] for row in answer(disk)["by_profile"]}
    assert listed == {"randread": 1.0, "seqread": 0.0}


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"period": "3w"}, "period"),
        ({"tolerance": "120"}, "tolerance"),
        ({"tolerance": "five"}, "tolerance"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-11-02", "until": "2026-11-01"}, "until"),
        ({"since": "2026-11-01", "period": "7d"}, "period"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, parameter):
    with pytest.raises(compliance.BadRequest) as refused:
        compliance.parse(params, now=NOW)
    assert refused.value.parameter == parameter and parameter in str(refused.value)


# ----------------------------------------------------------------------------- stability


def test_the_cv_of_a_known_series_and_its_seconds_below_80_percent_of_the_median():
    series = [100.0, 100.0, 100.0, 100.0, 50.0, 150.0, 70.0, 130.0]
    # mean 100, population standard deviation sqrt((2500 + 2500 + 900 + 900) / 8) = sqrt(850)
    assert stability.coefficient_of_variation(series) == pytest.approx(850**0.5 / 100)
    assert stability.share_below_median(series) == 2 / 8  # median 100: 50 and 70 are below 80
    assert stability.coefficient_of_variation([4000.0] * 30) == 0
    assert stability.coefficient_of_variation([5.0]) is None
    assert stability.tail_ratio(900.0, 250.0) == 3.6 and stability.tail_ratio(900.0, None) is None


def test_a_runs_stability_comes_from_its_samples_and_its_latency_percentiles(disk):
    run = measured(disk, at=NOW, iops=4000.0, seconds=[4000.0, 4000.0, 2000.0, 6000.0])
    found = disk_stability.run_stability(run)
    assert found is not None
    assert found["seconds"] == 4 and found["cv"] == pytest.approx((2_000_000**0.5) / 4000, abs=1e-4)
    assert found["below_median_share"] == 0.25
    assert found["read_p99_p50"] == 3.6 and found["write_p99_p50"] is None


def test_a_3_am_dip_on_wednesdays_lands_in_its_heatmap_cell(disk):
    for week in range(4):
        wednesday = datetime(2026, 11, 25, tzinfo=UTC) - timedelta(weeks=week)
        for hour in (1, 3, 5):
            measured(disk, at=wednesday + timedelta(hours=hour, minutes=30), iops=1500.0 if hour == 3 else 4000.0)
    found = disk_stability.heatmap(disk, compliance.parse({"period": "all"}, now=NOW + timedelta(days=1)))
    wednesday = next(day for day in found["days"] if day["day"] == "Wed")
    dip, before = wednesday["hours"][3], wednesday["hours"][1]
    assert (dip["runs"], dip["median_iops"], dip["iops_level"]) == (4, 1500.0, 4)
    assert (before["median_iops"], before["iops_level"]) == (4000.0, 0)
    assert found["zone"] == "UTC" and found["days"][0]["hours"][3]["runs"] == 0


def test_a_slower_profile_does_not_paint_the_hours_it_runs_in(disk):
    for day in range(1, 8):
        midnight = datetime(2026, 11, 25, tzinfo=UTC) - timedelta(days=day)
        measured(disk, at=midnight + timedelta(hours=1), iops=4000.0, profile_name="4k randread")
        measured(disk, at=midnight + timedelta(hours=5), iops=250.0, profile_name="1M read")
    found = disk_stability.heatmap(disk, compliance.parse({}, now=NOW))
    levels = {cell["iops_level"] for day in found["days"] for cell in day["hours"] if cell["runs"]}
    assert levels == {0}


# ----------------------------------------------------------------------------- shared causes


@pytest.fixture
def neighbours(team, credential, host) -> tuple[Disk, Disk, Disk]:
    """Disks on two hosts of site fra1 and one on a host of site ams1."""
    host.site = "fra1"
    host.save()
    other = Host.objects.create(
        team=team, name="vm2", address="127.0.0.2", username="b", credential=credential, site="fra1"
    )
    far = Host.objects.create(
        team=team, name="vm3", address="127.0.0.3", username="b", credential=credential, site="ams1"
    )
    make = lambda h, label: Disk.objects.create(  # noqa: E731
        host=h, label=label, target_path=f"/data/{label}", disk_type="custom", spec_iops=4000, spec_bytes_per_s=10**8
    )
    return make(host, "a"), make(other, "b"), make(far, "c")


def nights(disk: Disk, dip_night: int | None, minute: int = 0) -> list[Run]:
    return [
        measured(
            disk,
            at=NOW - timedelta(days=10 - night, hours=9) + timedelta(minutes=minute),
            iops=1000.0 if night == dip_night else 4000.0,
        )
        for night in range(10)
    ]


def test_a_drop_two_hosts_of_one_site_share_is_flagged_and_a_lone_drop_is_not(neighbours):
    a, b, c = neighbours
    a_runs, b_runs = nights(a, dip_night=6), nights(b, dip_night=6, minute=20)
    nights(c, dip_night=6)
    query = compliance.parse({}, now=NOW)
    (group,) = disk_stability.shared_drops(a, query)["groups"]
    assert {d["run"] for d in group["drops"]} == {a_runs[6].pk, b_runs[6].pk}
    assert group["hosts"] == 2 and group["drops"][0]["percent_of_median"] == 25.0
    assert disk_stability.shared_drops(c, query)["groups"] == []


def test_drops_hours_apart_on_two_hosts_are_not_shared(neighbours):
    a, b, _ = neighbours
    nights(a, dip_night=6)
    nights(b, dip_night=6, minute=180)
    assert disk_stability.shared_drops(a, compliance.parse({}, now=NOW))["groups"] == []


def test_a_host_without_a_site_says_why(disk):
    found = disk_stability.shared_drops(disk, compliance.parse({}, now=NOW))
    assert found["groups"] == [] and "no site" in found["why"]


# ----------------------------------------------------------------------------- API


@pytest.fixture
def api(owner, team) -> Client:
    return Client(headers={"Authorization": f"Bearer {ApiToken.issue(owner, team, 'compliance')[1]}"})


def test_the_api_answers_runs_and_below_share_and_names_a_bad_parameter(disk, api):
    now = datetime.now(UTC)
    for night in range(20):
        measured(disk, at=now - timedelta(days=20 - night, hours=1), iops=2000.0 if night < 5 else 4000.0)
    found = api.get(f"/api/v1/disks/{disk.pk}/compliance/").json()
    assert (found["runs"], found["below_share"], found["period"]) == (20, 0.25, "30d")
    assert found["longest_streak"]["runs"] == 5 and found["judged_against"] == "baseline"
    assert api.get(f"/api/v1/disks/{disk.pk}/compliance/?period=7d").json()["runs"] == 6
    refused = api.get(f"/api/v1/disks/{disk.pk}/compliance/?tolerance=150")
    assert refused.status_code == 400 and "tolerance" in refused.json()
    refused = api.get(f"/api/v1/disks/{disk.pk}/stability/?period=fortnight")
    assert refused.status_code == 400 and "period" in refused.json()


def test_the_api_gives_the_heatmap_and_shared_drops_and_a_runs_stability(neighbours, api):
    a, b, _ = neighbours
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    a_runs = [measured(a, at=now - timedelta(days=5 - d), iops=1000.0 if d == 2 else 4000.0) for d in range(5)]
    [measured(b, at=now - timedelta(days=5 - d, minutes=-10), iops=900.0 if d == 2 else 3000.0) for d in range(5)]
    found = api.get(f"/api/v1/disks/{a.pk}/stability/").json()
    assert found["heatmap"]["runs"] == 5 and len(found["heatmap"]["days"]) == 7
    (group,) = found["shared_drops"]["groups"]
    assert group["hosts"] == 2 and a_runs[2].pk in {d["run"] for d in group["drops"]}
    detail = api.get(f"/api/v1/runs/{a_runs[0].pk}/").json()
    assert detail["stability"]["read_p99_p50"] == 3.6 and detail["stability"]["cv"] is None


def test_the_compliance_and_stability_answers_match_their_schema(neighbours, owner, team, keep_the_test_connection):
    a, b, _ = neighbours
    now = datetime.now(UTC)
    runs = [
        measured(a, at=now - timedelta(days=d), iops=1000.0 if d == 2 else 4000.0, seconds=[4000.0, 3000.0])
        for d in range(1, 5)
    ]
    [measured(b, at=now - timedelta(days=d, minutes=-5), iops=900.0 if d == 2 else 3000.0) for d in range(1, 5)]
    headers = {"Authorization": f"Bearer {ApiToken.issue(owner, team, 'schema')[1]}"}
    for path, id_ in (
        ("/api/v1/disks/{id}/compliance/", a.pk),
        ("/api/v1/disks/{id}/stability/", a.pk),
        ("/api/v1/runs/{id}/", runs[0].pk),
    ):
        case = schema[path]["GET"].Case(path_parameters={"id": id_})
        response = case.call_and_validate(headers=headers)
        assert response.status_code == 200
    assert response.json()["stability"]["seconds"] == 2


# ----------------------------------------------------------------------------- pages


def test_the_disk_page_shows_the_compliance_card_the_heatmap_and_a_shared_drop(neighbours, owner_client):
    a, b, _ = neighbours
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for d in range(8):
        measured(a, at=now - timedelta(days=8 - d), iops=1000.0 if d in (2, 3) else 4000.0)
        measured(b, at=now - timedelta(days=8 - d, minutes=-10), iops=900.0 if d == 2 else 3000.0)
    page = owner_client.get(f"/disks/{a.pk}/").content.decode()
    assert 'id="disk-compliance"' in page and 'id="disk-stability"' in page
    assert "<strong>25 %</strong> of runs (2 of 8)" in page and "2 misses in a row" in page
    assert "4,000 IOPS at 4 KiB blocks · typed by hand in the disk's spec" in page
    assert page.count('class="shared-drop"') == 1 and "vm2 / b" in page
    assert page.count('class="heat heat-') == 2 * 7 * 24
    # The last 7 days hold six of the runs (the oldest of them finished a little over 7 days ago).
    looser = owner_client.get(f"/disks/{a.pk}/?period=7d&tolerance=50").content.decode()
    assert "<strong>33 %</strong> of runs (2 of 6)" in looser and "below 50 % of their baseline" in looser
    loosest = owner_client.get(f"/disks/{a.pk}/?period=7d&tolerance=80").content.decode()
    assert "<strong>0 %</strong> of runs (0 of 6)" in loosest


def test_the_disk_pages_compliance_card_can_leave_out_runs_with_a_verdict_and_its_report_link_keeps_it(
    disk, owner_client
):
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for night in range(8):
        half = night in (1, 4)
        run = measured(disk, at=now - timedelta(days=8 - night), iops=2000.0 if half else 4010.0)
        RunResult.objects.filter(run=run).update(
            measured_disk=not half, verdict_kinds="cache_suspected" if half else ""
        )
    every = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    assert "<strong>25 %</strong> of runs (2 of 8)" in every
    assert 'id="compliance-measured" name="measured" value="disk">' in every and "left out" not in every
    disk_only = owner_client.get(f"/disks/{disk.pk}/?measured=disk").content.decode()
    assert "<strong>0 %</strong> of runs (0 of 6)" in disk_only
    assert 'id="compliance-measured" name="measured" value="disk" checked>' in disk_only
    assert "runs with a verdict on their number left out" in disk_only
    link = re.search(r'href="([^"]+)" id="compliance-report-link"', disk_only).group(1).replace("&amp;", "&")
    assert "measured=disk" in link
    report = owner_client.get(link).content.decode()
    assert "(0 of 6)" in report or "0 of 6" in report, report[:2000]


def test_the_disk_page_names_a_bad_parameter_and_keeps_its_form(disk, owner_client):
    page = owner_client.get(f"/disks/{disk.pk}/?tolerance=-3").content.decode()
    assert 'id="compliance-error"' in page and "tolerance is a percent" in page
    assert 'id="compliance-tolerance"' in page and 'id="disk-charts"' in page


def test_the_run_page_shows_the_runs_stability(disk, owner_client):
    run = measured(disk, at=NOW, iops=4000.0, seconds=[4000.0, 4000.0, 2000.0, 6000.0])
    page = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-stability"' in page
    assert "35 %" in page  # CV: sqrt(2,000,000) / 4,000
    assert "read 3.6×" in page


def selected_period(page: str) -> str:
    field = page[page.index('id="compliance-period"') : page.index("</select>", page.index('id="compliance-period"'))]
    chosen = [option for option in field.split("<option")[1:] if " selected" in option.split(">")[0]]
    assert len(chosen) == 1, field
    return chosen[0].split(">")[1].split("<")[0]


def a_month_of_runs(disk: Disk) -> None:
    """Three runs in the last 7 days and two more between 7 and 30 days ago."""
    now = datetime.now(UTC)
    for days in (1, 2, 3, 12, 20):
        measured(disk, at=now - timedelta(days=days), iops=4000.0)


def test_the_period_field_shows_the_30_days_it_counts_when_none_is_asked_on_the_disk_and_share_pages(
    disk, owner, owner_client
):
    a_month_of_runs(disk)
    _, token = sharing.create(disk.team, owner, days=7, disk=disk)
    for url in (f"/disks/{disk.pk}/", f"/s/{token}/"):
        page = Client().get(url) if url.startswith("/s/") else owner_client.get(url)
        text = page.content.decode()
        assert selected_period(text) == "Last 30 days"
        assert "5 runs against a limit" in text
        week = (Client().get if url.startswith("/s/") else owner_client.get)(f"{url}?period=7d").content.decode()
        assert selected_period(week) == "Last 7 days" and "3 runs against a limit" in week


def test_a_period_from_the_address_is_shown_as_it_is_and_kept_by_apply(disk, owner_client):
    a_month_of_runs(disk)
    since = (datetime.now(UTC) - timedelta(days=15)).date().isoformat()
    page = owner_client.get(f"/disks/{disk.pk}/?since={since}").content.decode()
    assert selected_period(page) == f"From {since} to now" and "4 runs against a limit" in page
    assert f'<input type="hidden" name="since" value="{since}">' in page
    # Apply sends the field as shown (period=custom and the hidden since): the same 4 runs.
    applied = owner_client.get(f"/disks/{disk.pk}/?period=custom&since={since}&tolerance=5").content.decode()
    assert selected_period(applied) == f"From {since} to now" and "4 runs against a limit" in applied
    # Another period chosen in the field replaces since/until.
    week = owner_client.get(f"/disks/{disk.pk}/?period=7d&since={since}&tolerance=5").content.decode()
    assert selected_period(week) == "Last 7 days" and "3 runs against a limit" in week


# ----------------------------------------------------------------------------- in a real browser


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_compliance_cards_fit_a_phone_and_a_desktop_screen(
    screen, neighbours, owner, request, live_server, screenshot
):
    a, b, _ = neighbours
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for d in range(20):
        measured(a, at=now - timedelta(days=20 - d, hours=d % 5), iops=1800.0 if d % 7 == 3 else 4000.0)
        measured(b, at=now - timedelta(days=20 - d, hours=d % 5, minutes=-10), iops=900.0 if d == 3 else 3000.0)
    run = measured(a, at=now - timedelta(hours=2), iops=3500.0, seconds=[4000.0, 3900.0, 2500.0, 4100.0, 3000.0])
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/disks/{a.pk}/")
    settle(page)
    page.get_by_label("Period").select_option("90d")
    page.get_by_label("Tolerance").fill("10")
    page.locator("#compliance-measured").check()
    page.get_by_role("button", name="Apply").dispatch_event("click")  # on the button, wherever the page moved it
    page.wait_for_url("**tolerance=10**")
    settle(page)
    assert "below 90 % of their baseline" in page.locator("#compliance-below").inner_text()
    assert "measured=disk" in page.url and page.locator("#compliance-measured").is_checked()
    assert "runs with a verdict on their number left out" in page.locator("#compliance-runs").inner_text()
    assert page.locator("#shared-drops li").count() == 1
    screenshot("disk", on=page)
    assert_fits(page, "disk")
    assert not page.evaluate(UNLABELLED_CONTROLS)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    settle(page)
    screenshot("run", on=page)
    assert_fits(page, "run")
    assert page.locator("#run-stability").is_visible()
    assert not page.js_errors


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_period_shown_is_the_one_counted_and_apply_keeps_it_on_the_disk_and_share_pages(
    screen, disk, owner, request, live_server, screenshot
):
    a_month_of_runs(disk)
    _, token = sharing.create(disk.team, owner, days=7, disk=disk)
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    for name, url in (("disk", f"/disks/{disk.pk}/"), ("share", f"/s/{token}/")):
        page.goto(f"{live_server.url}{url}")
        settle(page)
        period = page.get_by_label("Period")
        assert period.evaluate("select => select.selectedOptions[0].textContent") == "Last 30 days"
        assert page.locator("#compliance-runs").inner_text().startswith("5 runs against a limit")
        shot = screenshot(f"period-{name}", on=page)
        page.locator("#disk-compliance").screenshot(path=str(shot.with_name(f"{shot.stem}-card.png")))
        # The click goes to the button itself, not to where it was: at phone width the charts below can still
        # move the page as they draw, and a click at the old point once landed on the latency chart's Show.
        page.get_by_role("button", name="Apply").dispatch_event("click")
        page.wait_for_url("**period=30d**")
        settle(page)
        assert page.get_by_label("Period").evaluate("s => s.selectedOptions[0].textContent") == "Last 30 days"
        assert page.locator("#compliance-runs").inner_text().startswith("5 runs against a limit")
        assert_fits(page, name)
    assert not page.js_errors


# ----------------------------------------------------------------------------- real runs


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_real_fio_runs_over_ssh_one_above_and_one_below_its_promise(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(
        host=host,
        label="tmpfs",
        target_path=target_dir(tmp_path),
        disk_type="custom",
        spec_iops=10,
        spec_bytes_per_s=10**12,
    )
    profile = quick_profile(team)
    kept = wait_final(queueing.request_run(disk, profile))
    # The same disk promised a billion IOPS: the next run is held against that.
    Disk.objects.filter(pk=disk.pk).update(spec_iops=10**9)
    disk.refresh_from_db()
    missed = wait_final(queueing.request_run(disk, profile))
    assert (kept.state, missed.state) == (Run.State.SUCCEEDED, Run.State.SUCCEEDED), missed.explanation

    found = compliance.disk_compliance(disk, compliance.parse({"period": "7d"}))
    assert (found["runs"], found["below"], found["below_share"]) == (2, 1, 0.5)
    # At 4 KiB the 10^12 B/s throughput binds first: the promise at the run's block size is 10^12 / 4,096 IOPS.
    assert found["limit"]["iops"] == 10**12 / 4096 and found["limit"]["block_size_bytes"] == 4096
    assert found["limit"]["from_run"] == missed.pk and found["limit"]["changed"]
    streak = found["longest_streak"]
    to_ms = missed.finished_at.replace(microsecond=missed.finished_at.microsecond // 1000 * 1000)  # as charted
    assert streak["runs"] == 1 and streak["to"] == to_ms.isoformat().replace("+00:00", "Z")
    kept_seconds, missed_seconds = (
        RunSample.objects.filter(run=kept).count(),
        RunSample.objects.filter(run=missed).count(),
    )
    assert kept_seconds and missed_seconds
    assert (found["seconds"]["seconds"], found["seconds"]["below"]) == (kept_seconds + missed_seconds, missed_seconds)

    levels = [(s.read_iops or 0) + (s.write_iops or 0) for s in RunSample.objects.filter(run=missed)]
    facts = disk_stability.run_stability(missed)
    assert facts is not None and facts["seconds"] == len(levels)
    expected_cv = stability.coefficient_of_variation(levels)
    assert facts["cv"] == (None if expected_cv is None else round(expected_cv, 4))
    clat = missed.summary["read"]["clat_us"]
    assert facts["read_p99_p50"] == round(clat["p99"] / clat["p50"], 2)
