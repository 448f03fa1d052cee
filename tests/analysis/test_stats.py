"""Compare with statistics and latency distributions side by side: histories built with the ORM from known
distributions (a set drawn 20 % below another, the same distribution twice, 3 runs against 3), a bimodal run's
CDF, the API and its schema, the Compare page's cards in a real browser, and real fio runs over the test sshd."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.test import Client

from jobs.analysis import stats as analysis
from jobs.api.models import ApiToken
from jobs.models import Annotation, Disk, Run, RunResult, Team
from jobs.results import stats as results_stats
from jobs.runs import queueing
from tests.browser import assert_fits, log_in, settle, wait_until
from tests.builders import quick_profile, target_dir, team_with_host, wait_final
from tests.factories import DiskFactory, nightly_runs
from tests.openapi import schema

T0 = datetime(2026, 9, 1, 2, 0, tzinfo=UTC)
PROFILE = "4k randread"


@pytest.fixture
def api(owner, team) -> Client:
    return Client(headers={"Authorization": f"Bearer {ApiToken.issue(owner, team, 'stats')[1]}"})


def nightly(
    disk: Disk, iops: list[float], *, start: datetime = T0, clat: dict | None = None, profile_name: str = PROFILE
) -> list[Run]:
    """One run a night at 02:00 from `start`, of total IOPS iops[i], stored as a succeeded run stores it."""
    return nightly_runs(disk, iops, start=start, profile_name=profile_name, clat=clat)


def stored(runs: list[Run], column: str = "total_iops") -> list[float]:
    return list(RunResult.objects.filter(run__in=runs).values_list(column, flat=True))


# ----------------------------------------------------------------------------- known truths


@pytest.mark.parametrize("test", ["mann-whitney", "welch"])
def test_disk_b_drawn_20_percent_below_disk_a_is_significantly_slower_with_a_ci_covering_minus_20(test, pair, api):
    rng = np.random.default_rng(20)
    a_runs = nightly(pair[0], list(rng.normal(4000, 200, 20)))
    b_runs = nightly(pair[1], list(rng.normal(3200, 160, 20)))
    answer = api.get(f"/api/v1/compare/stats/?a_disk={pair[0].pk}&b_disk={pair[1].pk}&test={test}").json()

    assert answer["verdict"] == "significant" and answer["test"] == test and answer["profile"] == PROFILE
    assert answer["p_value"] < 0.001
    low, high = answer["percent_ci"]
    assert low <= -20 <= high and high < 0
    assert (
        answer["text"].startswith("B: cloud volume is ") and " % slower than A: local nvme (p < 0.001" in answer["text"]
    )
    # The sets are the stored numbers, newest first.
    assert (answer["a"]["n"], answer["b"]["n"]) == (20, 20)
    assert answer["a"]["runs"] == [run.pk for run in reversed(a_runs)]
    assert answer["a"]["median"] == pytest.approx(float(np.median(stored(a_runs))))
    assert answer["b"]["mean"] == pytest.approx(float(np.mean(stored(b_runs))))
    assert answer["median_difference"] == pytest.approx(answer["b"]["median"] - answer["a"]["median"])
    mean_low, mean_high = answer["mean_difference_ci"]
    assert mean_low < answer["mean_difference"] < mean_high < 0


def test_two_sets_from_the_same_distribution_show_no_significant_difference(pair, api):
    rng = np.random.default_rng(3)
    nightly(pair[0], list(rng.normal(4000, 200, 20)))
    nightly(pair[1], list(rng.normal(4000, 200, 20)))
    answer = api.get(f"/api/v1/compare/stats/?a_disk={pair[0].pk}&b_disk={pair[1].pk}").json()
    assert answer["verdict"] == "not_significant" and answer["p_value"] >= 0.05
    assert answer["text"].startswith("No significant difference between B: cloud volume and A: local nvme (p = ")
    low, high = answer["percent_ci"]
    assert low < 0 < high


def test_three_runs_against_three_is_not_enough_to_tell(pair, api):
    nightly(pair[0], [4000, 4100, 3900])
    nightly(pair[1], [2000, 2100, 1900])
    answer = api.get(f"/api/v1/compare/stats/?a_disk={pair[0].pk}&b_disk={pair[1].pk}").json()
    assert answer["verdict"] == "not_enough" and answer["p_value"] is None and answer["percent_ci"] is None
    assert answer["text"] == (
        "Not enough runs to tell: A: local nvme has 3 runs and B: cloud volume has 3 runs; "
        f"a comparison needs at least {analysis.MIN_RUNS} in each."
    )
    assert (answer["a"]["n"], answer["b"]["n"], answer["min_runs"]) == (3, 3, 5)


def test_every_run_measuring_the_same_is_not_enough_to_tell():
    found = analysis.compare([500.0] * 6, [500.0] * 7)
    assert found.verdict == analysis.NOT_ENOUGH and "no spread" in found.text


def test_one_disk_before_and_after_a_30_percent_step_is_slower_after_it(disk, api):
    rng = np.random.default_rng(30)
    before = nightly(disk, list(rng.normal(4000, 120, 12)))
    after = nightly(disk, list(rng.normal(2800, 84, 10)), start=T0 + timedelta(days=12))
    split = (T0 + timedelta(days=12)).date().isoformat()
    answer = api.get(f"/api/v1/compare/stats/?disk={disk.pk}&split={split}").json()
    assert answer["verdict"] == "significant"
    assert answer["a"]["runs"] == [r.pk for r in reversed(before)] and answer["b"]["runs"] == [
        r.pk for r in reversed(after)
    ]
    assert answer["a"]["label"] == f"before {split} 00:00 UTC" and answer["text"].startswith(f"after {split}")
    low, high = answer["percent_ci"]
    assert low <= -30 <= high


def test_a_note_splits_a_disks_runs_before_and_after_its_moment(disk, api, team, owner):
    """Issue 17: "before/after a date or an annotation". The note's moment is the split, its words the label; a
    note for a host or the team needs the disk named; another team's note, or split and note together, are refused
    naming the parameter."""
    rng = np.random.default_rng(31)
    before = nightly(disk, list(rng.normal(4000, 120, 8)))
    after = nightly(disk, list(rng.normal(2800, 84, 8)), start=T0 + timedelta(days=8))
    moment = T0 + timedelta(days=8)
    note = Annotation.objects.create(team=team, disk=disk, at=moment, text="moved to PL2", created_by=owner)
    answer = api.get(f"/api/v1/compare/stats/?annotation={note.pk}").json()
    assert answer["verdict"] == "significant", answer
    assert answer["a"]["runs"] == [r.pk for r in reversed(before)]
    assert answer["b"]["runs"] == [r.pk for r in reversed(after)]
    assert answer["a"]["label"].startswith("before “moved to PL2” (")
    assert datetime.fromisoformat(answer["split"].replace("Z", "+00:00")) == moment
    team_note = Annotation.objects.create(team=team, at=moment, text="kernel upgrade", created_by=owner)
    refused = api.get(f"/api/v1/compare/stats/?annotation={team_note.pk}")
    assert refused.status_code == 400 and "disk" in refused.json()
    assert api.get(f"/api/v1/compare/stats/?annotation={team_note.pk}&disk={disk.pk}").json()["verdict"] == (
        "significant"
    )
    both = api.get(f"/api/v1/compare/stats/?annotation={note.pk}&disk={disk.pk}&split=2026-09-01")
    assert both.status_code == 400 and "split" in both.json()
    other_team = Annotation.objects.create(team=Team.objects.create(name="others"), at=moment, text="theirs")
    missing = api.get(f"/api/v1/compare/stats/?annotation={other_team.pk}&disk={disk.pk}")
    assert missing.status_code == 400 and "annotation" in missing.json()


def test_higher_latency_after_the_split_reads_as_slower(disk, api):
    quick = {"p50": 200.0, "p90": 300.0, "p95": 350.0, "p99": 500.0, "p99_9": 900.0, "max": 2000.0}
    nightly(disk, [4000.0] * 6, clat=quick)
    for night, p99 in enumerate([900.0, 950.0, 1000.0, 980.0, 940.0, 1020.0]):
        nightly(disk, [4000.0], start=T0 + timedelta(days=6 + night), clat=quick | {"p99": p99})
    answer = api.get(f"/api/v1/compare/stats/?disk={disk.pk}&split=2026-09-07&metric=read_p99").json()
    # All six p99s before are 500 µs, after ~950: the spread is after the split only, and the test still holds.
    assert answer["unit"] == "µs" and answer["verdict"] == "significant"
    assert " % slower than before " in answer["text"] and answer["percent"] > 0


def test_runs_not_in_steady_state_are_left_out_unless_asked_to_keep_them(pair, api):
    a_runs = nightly(pair[0], [4000, 4050, 3950, 4020, 3980, 4010])
    nightly(pair[1], [4000, 4050, 3950, 4020, 3980])
    RunResult.objects.filter(run=a_runs[0]).update(steady=False)
    url = f"/api/v1/compare/stats/?a_disk={pair[0].pk}&b_disk={pair[1].pk}"
    skipped, kept = api.get(url).json(), api.get(url + "&skip_unsteady=false").json()
    assert (skipped["a"]["n"], skipped["a"]["left_out_unsteady"]) == (5, 1) and a_runs[0].pk not in skipped["a"]["runs"]
    assert (kept["a"]["n"], kept["a"]["left_out_unsteady"], kept["skip_unsteady"]) == (6, 0, False)


def test_runs_with_a_verdict_are_left_out_when_asked_and_counted(pair, api):
    a_runs = nightly(pair[0], [4000, 4050, 3950, 4020, 3980, 4010])
    nightly(pair[1], [4000, 4050, 3950, 4020, 3980])
    RunResult.objects.filter(run=a_runs[1]).update(measured_disk=False, verdict_kinds="client_bound")
    RunResult.objects.filter(run=a_runs[2]).update(measured_disk=True)
    url = f"/api/v1/compare/stats/?a_disk={pair[0].pk}&b_disk={pair[1].pk}"
    kept, skipped = api.get(url).json(), api.get(url + "&skip_verdicts=true").json()
    assert (kept["a"]["n"], kept["a"]["left_out_verdicts"], kept["skip_verdicts"]) == (6, 0, False)
    assert (skipped["a"]["n"], skipped["a"]["left_out_verdicts"], skipped["skip_verdicts"]) == (5, 1, True)
    assert a_runs[1].pk not in skipped["a"]["runs"] and a_runs[2].pk in skipped["a"]["runs"]
    refused = api.get(url + "&skip_verdicts=maybe")
    assert refused.status_code == 400 and "skip_verdicts" in refused.json()


def test_a_parameter_that_cannot_be_used_is_refused_naming_it(pair, api):
    nightly(pair[0], [4000] * 5)
    other = DiskFactory()  # in another team
    empty = Disk.objects.create(host=pair[0].host, label="new", target_path="/data/new")
    base = "/api/v1/compare/stats/"
    for query, field, words in (
        ("", "disk", "Give either a_disk and b_disk"),
        (f"?a_disk={pair[0].pk}&b_disk={pair[1].pk}&metric=speed", "metric", "'speed' is not a metric"),
        (f"?a_disk={pair[0].pk}&b_disk={pair[1].pk}&test=t", "test", "choose mann-whitney or welch"),
        (f"?a_disk={pair[0].pk}&b_disk={other.pk}", "b_disk", f"No disk {other.pk} in your team"),
        (f"?a_disk={pair[0].pk}&b_disk={pair[0].pk}", "b_disk", "b_disk is a_disk"),
        (f"?disk={pair[0].pk}&split=last+tuesday", "split", "split takes an ISO date"),
        (f"?a_disk={pair[1].pk}&b_disk={empty.pk}", "profile", "None of these disks has a run yet"),
    ):
        response = api.get(base + query)
        assert response.status_code == 400, query
        assert words in response.json()[field][0], response.json()
    assert "runs" in api.get("/api/v1/distributions/").json()
    assert "No run 999999 in your team" in api.get("/api/v1/distributions/?runs=999999").json()["runs"][0]


# ----------------------------------------------------------------------------- distributions


BIMODAL = {
    "mean": 9000.0,
    "p50": 800.0,
    "p90": 950.0,
    "p95": 55000.0,
    "p99": 90000.0,
    "p99_9": 99000.0,
    "max": 130000.0,
}
TIGHT = {
    "mean": 10000.0,
    "p50": 10000.0,
    "p90": 10400.0,
    "p95": 10600.0,
    "p99": 11000.0,
    "p99_9": 12000.0,
    "max": 15000.0,
}


def test_a_bimodal_runs_cdf_shows_its_hump_beside_a_tight_run(pair, api):
    (bimodal,) = nightly(pair[0], [3000], clat=BIMODAL)
    (tight,) = nightly(pair[1], [3000], clat=TIGHT)
    answer = api.get(f"/api/v1/distributions/?runs={bimodal.pk},{tight.pk}").json()
    first, second = answer["series"]
    assert (first["run"], second["run"]) == (bimodal.pk, tight.pk) and first["source"] == "percentiles"
    # The points are the printed percentiles, the max at 100 %.
    assert [(p["percent"], p["latency_us"]) for p in first["cdf"]] == [
        (50.0, 800.0), (90.0, 950.0), (95.0, 55000.0), (99.0, 90000.0), (99.9, 99000.0), (100.0, 130000.0)
    ]  # fmt: skip
    # Bimodal: 90 % within 1 ms, then a jump of more than 50x to the 50-100 ms hump; tight: p99.9 within 1.2x p50.
    by_percent = {p["percent"]: p["latency_us"] for p in first["cdf"]}
    assert by_percent[95.0] / by_percent[90.0] > 50 and 50_000 <= by_percent[95.0] and by_percent[99.9] <= 100_000
    tight_points = {p["percent"]: p["latency_us"] for p in second["cdf"]}
    assert tight_points[99.9] / tight_points[50.0] <= 1.2
    assert answer["edges_us"] is None and first["histogram"] is None


def test_json_plus_bins_give_a_full_cdf_and_histograms_on_shared_edges(pair, api):
    (imported,) = nightly(pair[0], [3000])
    (plain,) = nightly(pair[1], [3000], clat=TIGHT)
    # 82 % of I/Os near 1 ms and 18 % between 50 and 100 ms, as the field report's cloud.
    bins = {"1000000": 500, "1100000": 320, "60000000": 100, "90000000": 80}
    Run.objects.filter(pk=imported.pk).update(summary=imported.summary | {"latency_bins_ns": {"read": bins}})
    answer = api.get(f"/api/v1/distributions/?runs={imported.pk},{plain.pk}").json()
    with_bins, without = answer["series"]
    assert with_bins["source"] == "bins" and without["source"] == "percentiles" and without["histogram"] is None
    assert [p["percent"] for p in with_bins["cdf"]] == [50.0, 82.0, 92.0, 100.0]
    assert [p["latency_us"] for p in with_bins["cdf"]] == [1000.0, 1100.0, 60000.0, 90000.0]
    counts, edges = with_bins["histogram"]["counts"], answer["edges_us"]
    assert sum(counts) == 1000 and len(edges) == len(counts) + 1
    # Two humps with empty bins between them.
    filled = [i for i, n in enumerate(counts) if n]
    assert filled[0] < filled[-1] - 1 and any(counts[i] == 0 for i in range(filled[0], filled[-1]))
    assert sum(counts[i] for i, edge in enumerate(edges[:-1]) if edge >= 50_000) == 180


def test_a_disks_distribution_is_its_latest_run_of_the_profile(pair, api):
    nightly(pair[0], [3000, 3100], clat=TIGHT)
    latest = nightly(pair[0], [2000], start=T0 + timedelta(days=5), clat=BIMODAL)[0]
    answer = api.get(f"/api/v1/distributions/?disks={pair[0].pk},{pair[1].pk}").json()
    assert answer["profile"] == PROFILE and answer["disks_without_runs"] == [pair[1].pk]
    (series,) = answer["series"]
    assert series["run"] == latest.pk and series["percentiles_us"]["p95"] == 55000.0
    assert "latest successful run" in answer["what"]


def test_the_statistics_answers_match_their_schema(pair, owner, team, keep_the_test_connection):
    rng = np.random.default_rng(1)
    a_runs = nightly(pair[0], list(rng.normal(4000, 200, 6)), clat=BIMODAL)
    nightly(pair[1], list(rng.normal(3000, 200, 6)))
    headers = {"Authorization": f"Bearer {ApiToken.issue(owner, team, 'schema')[1]}"}
    for path, query in (
        ("/api/v1/compare/stats/", {"a_disk": str(pair[0].pk), "b_disk": str(pair[1].pk)}),
        ("/api/v1/compare/stats/", {"disk": str(pair[0].pk), "split": "2026-09-04", "test": "welch"}),
        ("/api/v1/compare/stats/", {"a_disk": str(pair[0].pk), "b_disk": str(pair[1].pk), "metric": "write_p99"}),
        ("/api/v1/distributions/", {"runs": f"{a_runs[0].pk},{a_runs[1].pk}"}),
        ("/api/v1/distributions/", {"disks": f"{pair[0].pk},{pair[1].pk}", "profile": PROFILE}),
    ):
        response = schema[path]["GET"].Case(query=query).call_and_validate(headers=headers)
        assert response.status_code == 200, response.text


# ----------------------------------------------------------------------------- pages


def test_the_compare_page_has_a_statistics_card_for_two_disks_and_a_before_after_form(pair, owner_client):
    rng = np.random.default_rng(20)
    nightly(pair[0], list(rng.normal(4000, 200, 8)))
    nightly(pair[1], list(rng.normal(3200, 160, 8)))
    page = owner_client.get(f"/compare/?disks={pair[0].pk},{pair[1].pk}").content.decode()
    assert 'id="statistics"' in page and "B: cloud volume is " in page and "% slower than A: local nvme" in page
    assert f'data-url="/compare/distributions.json?disks={pair[0].pk},{pair[1].pk}&amp;profile=4k%20randread"' in page
    split = owner_client.get(f"/compare/?disk={pair[0].pk}&split=2026-09-05").content.decode()
    assert (
        "Not enough runs to tell: before 2026-09-05 00:00 UTC has 4 runs and after 2026-09-05 00:00 UTC has 4 runs"
        in split
    )
    bad = owner_client.get(f"/compare/?disk={pair[0].pk}&split=soon").content.decode()
    assert "split: split takes an ISO date" in bad
    json = owner_client.get(f"/compare/distributions.json?disks={pair[0].pk}&profile={PROFILE}")
    assert json.status_code == 200 and json.json()["series"][0]["disk"] == pair[0].pk


def thirty_nights_and_one_odd_run(disk: Disk) -> None:
    """30 nights of the usual profile, 20 % slower from 2026-09-16; and one run of a profile first by name."""
    rng = np.random.default_rng(6)
    nightly(disk, [*rng.normal(4000, 100, 15), *rng.normal(3200, 80, 15)])
    nightly(disk, [5000.0], start=T0 + timedelta(days=3, hours=1), profile_name="1m seqread")


def test_before_and_after_starts_with_the_disks_profile_of_the_most_runs(pair, owner_client):
    thirty_nights_and_one_odd_run(pair[0])
    page = owner_client.get(f"/compare/?disk={pair[0].pk}&split=2026-09-16").content.decode()
    assert '<option value="4k randread" selected>4k randread (30 runs)</option>' in page
    assert '<option value="1m seqread">1m seqread (1 run)</option>' in page
    assert "Not enough runs to tell" not in page and "% slower than before" in page
    # Asked for by name, the other profile is still there to choose.
    odd = owner_client.get(f"/compare/?disk={pair[0].pk}&split=2026-09-16&profile=1m%20seqread").content.decode()
    assert '<option value="1m seqread" selected>' in odd and "Not enough runs to tell" in odd


# The x-axis labels a chart draws (Chart.js's label items, measured in their own font) that touch the next one.
OVERLAPPING_X_LABELS = """(id) => {
  const chart = Chart.getChart(id);
  const scale = chart.scales.x;
  const items = scale.getLabelItems(chart.chartArea).filter((item) => String(item.label) !== "");
  const ctx = chart.ctx;
  const boxes = items.map((item) => {
    ctx.save();
    ctx.font = (item.font || item.options.font).string;
    const width = ctx.measureText(String(item.label)).width;
    ctx.restore();
    const x = item.options.translation[0];
    const rotated = item.options.rotation !== 0;
    return { label: String(item.label), left: x - width / 2, right: x + width / 2, rotated };
  }).sort((a, b) => a.left - b.left);
  const out = [];
  for (let i = 1; i < boxes.length; i++) {
    if (boxes[i].left < boxes[i - 1].right + 2) out.push(boxes[i - 1].label + " | " + boxes[i].label);
  }
  return out.concat(boxes.filter((b) => b.rotated).map((b) => b.label + " rotated"));
}"""


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_compare_statistics_and_distributions_fit_a_phone_and_a_desktop(
    screen, pair, owner, request, live_server, screenshot
):
    rng = np.random.default_rng(20)
    nightly(pair[0], list(rng.normal(4000, 200, 8)), clat=TIGHT)
    runs = nightly(pair[1], list(rng.normal(3200, 160, 8)), clat=BIMODAL)
    bins = {"1000000": 500, "1100000": 320, "60000000": 100, "90000000": 80}
    Run.objects.filter(pk=runs[-1].pk).update(summary=runs[-1].summary | {"latency_bins_ns": {"read": bins}})
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/compare/?disks={pair[0].pk},{pair[1].pk}")
    settle(page)
    wait_until(page, "window.Chart && Chart.getChart('distributions-cdf') && Chart.getChart('distributions-histogram')")
    screenshot("compare-stats", on=page)
    assert_fits(page, "compare statistics")
    assert page.locator("#statistics-verdict").is_visible()
    assert "slower than A: local nvme" in page.locator("#statistics-verdict").inner_text()
    assert page.evaluate("Chart.getChart('distributions-cdf').data.datasets.length") == 2
    assert page.evaluate("Chart.getChart('distributions-cdf').options.scales.x.type") == "logarithmic"
    assert page.evaluate(OVERLAPPING_X_LABELS, "distributions-cdf") == []
    # The before/after form leads to the same card for one disk.
    page.select_option("#before-after select[name=disk]", str(pair[1].pk))
    page.fill("#before-after input[name=split]", "2026-09-05")
    page.locator("#before-after button").click()
    page.wait_for_url("**split=2026-09-05**")
    assert "Not enough runs to tell" in page.locator("#statistics").inner_text()
    assert not page.js_errors


@pytest.mark.parametrize("screen", ["phone_page", "page"])
def test_the_before_after_form_compares_the_profile_of_the_most_runs(
    screen, pair, owner, request, live_server, screenshot
):
    thirty_nights_and_one_odd_run(pair[0])
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/compare/")
    settle(page)
    page.select_option("#before-after select[name=disk]", str(pair[0].pk))
    page.fill("#before-after input[name=split]", "2026-09-16")
    page.locator("#before-after button").click()
    page.wait_for_url("**split=2026-09-16**")
    settle(page)
    assert page.locator("#stats-profile").evaluate("s => s.selectedOptions[0].textContent") == "4k randread (30 runs)"
    verdict = page.locator("#statistics-verdict").inner_text()
    assert "slower than before" in verdict and "Not enough runs" not in verdict
    shot = screenshot("before-after", on=page)
    page.locator("#statistics").screenshot(path=str(shot.with_name(f"{shot.stem}-card.png")))
    assert_fits(page, "compare before/after")
    assert not page.js_errors


# ----------------------------------------------------------------------------- real runs


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_fio_runs_on_two_directories_are_compared_with_their_stored_numbers(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    first = Disk.objects.create(host=host, label="first", target_path=target_dir(tmp_path / "one"))
    second = Disk.objects.create(host=host, label="second", target_path=target_dir(tmp_path / "two"))
    profile = quick_profile(team)
    runs: dict[int, list[Run]] = {first.pk: [], second.pk: []}
    for _ in range(2):
        for disk in (first, second):
            run = wait_final(queueing.request_run(disk, profile))
            assert run.state == Run.State.SUCCEEDED, run.explanation
            runs[disk.pk].append(run)
    query = results_stats.parse({"a_disk": str(first.pk), "b_disk": str(second.pk), "skip_unsteady": "false"}, team)
    answer = results_stats.compare(query)
    assert answer["profile"] == profile.name and answer["verdict"] == "not_enough"
    for side, disk in (("a", first), ("b", second)):
        values = stored(runs[disk.pk])
        assert answer[side]["n"] == 2 and sorted(answer[side]["runs"]) == sorted(r.pk for r in runs[disk.pk])
        assert answer[side]["median"] == pytest.approx(float(np.median(values)))
        # The stored totals are fio's, kept to the hundredth (timeseries.run_numbers).
        assert sorted(values) == sorted(round(r.summary["total"]["iops"], 2) for r in runs[disk.pk])
    found = results_stats.compare(
        results_stats.parse({"a_disk": str(first.pk), "b_disk": str(second.pk), "metric": "read_p99"}, team)
    )
    assert found["a"]["median"] == pytest.approx(float(np.median(stored(runs[first.pk], "read_p99_us"))))
