from __future__ import annotations

import itertools
import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import timeseries
from jobs.models import Annotation, ChangePoint, Disk, Profile, Run, RunResult, RunResultDay, RunSample
from jobs.results import series as chart_series
from jobs.teams import membership as teams
from tests.factories import ProfileFactory, RunFactory

MAX_POINTS = 2000


def _summary(total: float, *, write: float | None = None, p99: float = 900.0, **extra: Any) -> dict:
    def direction(iops: float | None) -> dict | None:
        if iops is None:
            return None
        clat = {"mean": 200.0, "max": 9000.0, "p50": 150.0, "p90": 400.0, "p95": 500.0, "p99": p99, "p99_9": 2500.0}
        return {"iops": iops, "bw_bytes_per_s": iops * 4096, "clat_us": clat}

    read = total - (write or 0.0)
    return {
        "tool": "fio", "tool_version": "fio-3.33", "total": {"iops": total, "bw_bytes_per_s": total * 4096},
        "read": direction(read if read else None), "write": direction(write), "processes": 1,
        "block_size_bytes": 4096, "read_percent": 100.0 if write is None else 50.0, "direct": True,
        "runtime_s": 60.0, "samples": [],
    } | extra  # fmt: skip


def _runs(disk: Disk, count: int, *, profile: Profile | None = None, name: str = "4k randread", **fields: Any):
    """`count` succeeded runs a minute apart, the last one finished now, bulk-created like an import would."""
    now = timezone.now()
    snapshot = disk.limits(block_size=4096).as_dict()
    runs = []
    for i in range(count):
        finished = now - timedelta(minutes=count - i)
        values = {
            "state": Run.State.SUCCEEDED, "started_at": finished - timedelta(seconds=60), "finished_at": finished,
            "summary": _summary(1000.0 + (i * 37) % 1000), "limits_snapshot": snapshot,
        } | fields  # fmt: skip
        runs.append(RunFactory.build(disk=disk, profile=profile, profile_name=profile.name if profile else name,
                                     **values))  # fmt: skip
    runs = Run.objects.bulk_create(runs)
    _keep_results(disk)
    return runs


def _keep_results(disk: Disk) -> None:
    """What RunResult.record keeps of every succeeded run, for runs made or changed in bulk by these tests."""
    RunResult.objects.filter(disk=disk).delete()
    finished = Run.objects.filter(disk=disk, state=Run.State.SUCCEEDED, finished_at__isnull=False)
    RunResult.objects.bulk_create(RunResult.of(run) for run in finished.select_related("disk"))
    RunResultDay.rebuild(disk)


def _get(client: Client, url: str, status: int = 200) -> dict:
    response = client.get(url)
    assert response.status_code == status, response.content[:500]
    return response.json()


@pytest.fixture
def stranger_client(db) -> Client:
    user = User.objects.create_user("mallory", password="a-long-test-password-2")
    teams.place_new_user(user)
    client = Client()
    client.force_login(user)
    return client


# ----------------------------------------------------------------------------------------- disk series


def test_the_disk_series_has_iops_latency_limits_and_units(owner_client, disk):
    profile = ProfileFactory(team=disk.team, name="4k randrw", rw="randrw")
    _runs(disk, 3, profile=profile, summary=_summary(3000.0, write=1000.0))
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all")

    assert data["units"]["iops"] == "IO/s" and data["units"]["latency"].startswith("µs")
    assert data["units"]["x"].startswith("ms since the Unix epoch")
    assert data["limits"]["baseline_iops"] == 4000
    assert data["profiles"] == [
        {"key": str(profile.pk), "id": profile.pk, "name": "4k randrw", "runs": 3,
         "last_finished_at": data["profiles"][0]["last_finished_at"]},
    ]  # fmt: skip
    (series,) = data["series"]
    assert series["profile"] == {"key": str(profile.pk), "id": profile.pk, "name": "4k randrw"}
    assert series["limits"] == {"baseline_iops": 4000, "burst_iops": None}
    total = series["iops"]["total"]
    assert set(total) == {"x", "y", "run", "steady", "warnings", "efficiency", "limit"}
    assert (total["y"][0], total["efficiency"][0], total["limit"][0]) == (3000.0, 0.75, 4000)
    finished = Run.objects.get(pk=total["run"][0]).finished_at
    assert finished.timestamp() * 1000 == pytest.approx(total["x"][0], abs=1)
    assert total["x"] == sorted(total["x"]) and len(set(total["run"])) == 3
    assert series["iops"]["read"]["y"] == [2000.0] * 3
    assert series["iops"]["write"]["y"] == [1000.0] * 3
    assert series["latency_us"]["read"]["p99"]["y"] == [900.0] * 3
    assert series["latency_us"]["write"]["p99_9"]["y"] == [2500.0] * 3
    assert series["latency_us"]["write"]["p50"]["x"] == total["x"]


def test_efficiency_is_measured_total_over_the_runs_effective_limit(owner_client, disk):
    # A custom disk of 4,000 IOPS and a run of 3,000: 75 %.
    _runs(disk, 1, summary=_summary(3000.0))
    (series,) = _get(owner_client, f"/disks/{disk.pk}/series.json")["series"]
    total = series["iops"]["total"]
    assert (total["efficiency"], total["limit"]) == ([0.75], [4000])


def test_efficiency_uses_the_limit_snapshotted_on_the_run_not_todays(owner_client, disk):
    _runs(disk, 1, summary=_summary(3000.0), limits_snapshot={"iops": 6000.0, "effective_iops": 5000.0})
    (series,) = _get(owner_client, f"/disks/{disk.pk}/series.json")["series"]
    total = series["iops"]["total"]
    assert (total["efficiency"], total["limit"]) == ([0.6], [5000.0])
    assert series["limits"]["baseline_iops"] == 5000.0


def test_a_run_without_a_snapshot_is_compared_with_the_disks_limits_at_its_block_size(owner_client, disk):
    # 100 MB/s at 64 KiB is 1,525.9 IOPS: the throughput binds before the 4,000 IOPS.
    _runs(disk, 1, summary=_summary(1000.0, block_size_bytes=65536), limits_snapshot={"error": "spec changed"})
    (series,) = _get(owner_client, f"/disks/{disk.pk}/series.json")["series"]
    limit = 100_000_000 / 65536
    assert series["iops"]["total"]["limit"][0] == pytest.approx(limit)
    assert series["iops"]["total"]["efficiency"][0] == round(1000.0 / limit, 4)


def test_burst_limits_are_drawn_when_the_disk_has_them(owner_client, disk):
    disk.spec_burst_iops = 12000
    disk.save()
    _runs(disk, 2)
    data = _get(owner_client, f"/disks/{disk.pk}/series.json")
    assert data["limits"]["burst_iops"] == 12000
    assert data["series"][0]["limits"]["burst_iops"] == 12000


def test_thousands_of_runs_come_back_as_at_most_2000_points_per_series_with_extremes_kept(owner_client, disk):
    runs = _runs(disk, 5000)
    lowest, highest = runs[1234], runs[4321]
    Run.objects.filter(pk=lowest.pk).update(summary=_summary(3.0, p99=1.0))
    Run.objects.filter(pk=highest.pk).update(summary=_summary(99_999.0, p99=1e6))
    _keep_results(disk)
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all")
    (series,) = data["series"]
    assert series["runs"] == 5000 and series["downsampled"] is True
    total = series["iops"]["total"]
    for points in [total, series["iops"]["read"], *series["latency_us"]["read"].values()]:
        assert 1000 < len(points["x"]) <= MAX_POINTS
        assert len(points["x"]) == len(points["y"]) == len(points["run"])
    assert len(total["efficiency"]) == len(total["limit"]) == len(total["x"])
    assert series["iops"]["write"] == {"x": [], "y": [], "run": [], "steady": [], "warnings": []}
    assert {lowest.pk, highest.pk, runs[0].pk, runs[-1].pk} <= set(total["run"])
    assert (min(total["y"]), max(total["y"])) == (3.0, 99_999.0)
    p99 = series["latency_us"]["read"]["p99"]["y"]
    assert (min(p99), max(p99)) == (1.0, 1e6)
    assert (
        len(_get(owner_client, f"/disks/{disk.pk}/series.json?range=all&points=100")["series"][0]["iops"]["total"])
        <= 100
    )


def test_the_time_range_and_profile_filters_pick_runs(owner_client, disk):
    profile = ProfileFactory(team=disk.team, name="64k seq read", rw="read", block_size_bytes=65536)
    recent = _runs(disk, 3, profile=profile)
    old = _runs(disk, 2, name="import: old.json")
    Run.objects.filter(pk__in=[r.pk for r in old]).update(finished_at=timezone.now() - timedelta(days=10))
    Run.objects.filter(pk=recent[0].pk).update(finished_at=timezone.now() - timedelta(hours=30))
    _keep_results(disk)

    def runs(query: str) -> dict[str, int]:
        data = _get(owner_client, f"/disks/{disk.pk}/series.json?{query}")
        return {s["profile"]["name"]: s["runs"] for s in data["series"]}

    assert runs("range=24h") == {"64k seq read": 2}
    assert runs("range=7d") == {"64k seq read": 3}
    assert runs("range=30d") == {"64k seq read": 3, "import: old.json": 2}
    assert runs("range=all&profile=import: old.json") == {"import: old.json": 2}
    assert runs(f"range=all&profile={profile.pk}") == {"64k seq read": 3}
    day = (timezone.now() - timedelta(days=10)).date().isoformat()
    assert runs(f"range=custom&from={day}&to={day}") == {"import: old.json": 2}
    # The filter still offers every profile when the range holds none of its runs.
    assert {p["name"] for p in _get(owner_client, f"/disks/{disk.pk}/series.json?range=24h")["profiles"]} == {
        "64k seq read", "import: old.json",
    }  # fmt: skip


def test_without_a_range_the_disk_series_draws_the_shortest_that_fits_the_runs(owner_client, disk):
    """Today's runs of a new disk were piled into one column of the 30-day default; now the default is the first
    of 24h, 7d, 30d and all that holds every run, or at least ENOUGH_RUNS of them."""

    def fitted(query: str = "") -> tuple[str, bool, int]:
        data = _get(owner_client, f"/disks/{disk.pk}/series.json?{query}")
        return data["range"]["name"], data["range"]["fitted"], data["runs"]

    runs = _runs(disk, 5)
    assert fitted() == ("24h", True, 5)
    for days, name in ((3, "7d"), (10, "30d"), (60, "all")):
        Run.objects.filter(pk=runs[0].pk).update(finished_at=timezone.now() - timedelta(days=days))
        _keep_results(disk)
        assert fitted() == (name, True, 5)
    assert fitted("range=7d") == ("7d", False, 4)
    # A disk run often opens on its recent runs, not on all time.
    _runs(disk, timeseries.ENOUGH_RUNS)
    Run.objects.filter(pk=runs[0].pk).update(finished_at=timezone.now() - timedelta(days=60))
    _keep_results(disk)
    assert fitted() == ("24h", True, timeseries.ENOUGH_RUNS + 4)
    # The profile asked for fits its own runs.
    _runs(disk, 1, name="import: old.json", finished_at=timezone.now() - timedelta(days=20))
    assert fitted("profile=import: old.json") == ("30d", True, 1)
    # Fitting costs one query, however many runs.
    with CaptureQueriesContext(connection) as explicit:
        fitted("range=30d")
    with CaptureQueriesContext(connection) as default:
        fitted()
    assert len(default) == len(explicit) + 1


def test_only_finished_successful_runs_are_drawn(owner_client, disk):
    _runs(disk, 2)
    _runs(disk, 1, state=Run.State.FAILED)
    _runs(disk, 1, state=Run.State.RUNNING, finished_at=None)
    data = _get(owner_client, f"/disks/{disk.pk}/series.json")
    assert data["runs"] == 2


def test_runs_with_a_verdict_are_marked_and_left_out_when_asked(owner_client, disk):
    runs = _runs(disk, 4)
    RunResult.objects.filter(run=runs[1]).update(measured_disk=False, verdict_kinds="client_bound,cache_suspected")
    RunResult.objects.filter(run__in=runs[2:]).update(measured_disk=True)
    every = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all")
    total = every["series"][0]["iops"]["total"]
    assert every["measured"] == "all" and total["run"] == [r.pk for r in runs]
    measured = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all&measured=disk")
    # The run not judged (the first) stays; the one with a verdict goes.
    assert measured["measured"] == "disk" and measured["runs"] == 3
    assert measured["series"][0]["iops"]["total"]["run"] == [runs[0].pk, runs[2].pk, runs[3].pk]
    page = owner_client.get(f"/disks/{disk.pk}/").content.decode()
    # The chart's marks come with the page: the run with verdicts, by label.
    marks = json.loads(re.search(r'<script id="run-marks" type="application/json">(.*?)</script>', page).group(1))
    assert marks["verdicts"] == {str(runs[1].pk): ["client-bound", "cache suspected"]}
    assert "<strong>2 of 3</strong> judged runs" in page
    assert "the others: client-bound 1, cache suspected 1" in page
    assert "Runs that measured the disk only" in page
    refused = owner_client.get(f"/disks/{disk.pk}/series.json?measured=some")
    assert refused.status_code == 400 and "'measured' must be 'disk'" in refused.json()["error"]


def test_an_empty_range_answers_with_no_series_and_the_profiles_to_pick_from(owner_client, disk):
    _runs(disk, 1)
    Run.objects.update(finished_at=timezone.now() - timedelta(days=3))
    _keep_results(disk)
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=24h")
    assert data["series"] == [] and data["runs"] == 0
    assert [p["name"] for p in data["profiles"]] == ["4k randread"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("range=year", "Unknown range"),
        ("range=custom&from=yesterday", "not an ISO date"),
        ("range=custom&from=2024-05-02&to=2024-05-01", "before"),
        ("points=5", "points"),
        ("points=²", "points"),
    ],
)
def test_a_bad_filter_is_a_400_that_says_what_to_send(owner_client, disk, query, message):
    assert message in _get(owner_client, f"/disks/{disk.pk}/series.json?{query}", status=400)["error"]


@pytest.mark.parametrize("query", ["range=all", "range=30d", "range=custom&from=2000-01-01&profile=other"])
def test_the_disk_series_asks_a_constant_number_of_queries(owner_client, disk, query):
    other = ProfileFactory(team=disk.team, name="other", rw="randwrite")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            _get(owner_client, f"/disks/{disk.pk}/series.json?{query}")
        return len(queries)

    _runs(disk, 10)
    _runs(disk, 10, profile=other)
    few = count()
    _runs(disk, 90)
    _runs(disk, 90, profile=other)
    assert count() == few <= 8  # the last 2: the change points and annotations the charts mark


def test_the_series_read_result_rows_and_never_the_runs_table(owner_client, disk):
    _runs(disk, 3)
    with CaptureQueriesContext(connection) as queries:
        _get(owner_client, f"/disks/{disk.pk}/series.json")
    assert any('"jobs_runresult"' in q["sql"] for q in queries)
    assert not any('"jobs_run"' in q["sql"] for q in queries)


def test_another_teams_disk_series_is_a_404(stranger_client, disk):
    _runs(disk, 1)
    assert stranger_client.get(f"/disks/{disk.pk}/series.json").status_code == 404


def test_the_series_need_a_login(disk):
    response = Client().get(f"/disks/{disk.pk}/series.json")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# ----------------------------------------------------------------------------------------- drawn from days


@pytest.fixture
def from_days(monkeypatch) -> None:
    """A range of more than 50 runs is drawn from its days (the view's own threshold is 10,000)."""
    monkeypatch.setattr(chart_series, "DAY_BUCKETS_ABOVE", 50)


def _runs_at(disk: Disk, moments: list[datetime], totals: list[float], *, profile: Profile | None = None,
             name: str = "4k randread", write: bool = False) -> list[Run]:  # fmt: skip
    """Succeeded runs finished at `moments`, of those total IOPS (p99 latency: 1,000,000 / total)."""
    snapshot = disk.limits(block_size=4096).as_dict()
    runs = [
        RunFactory.build(disk=disk, profile=profile, profile_name=profile.name if profile else name, succeeded=True,
                         finished_at=moment, limits_snapshot=snapshot,
                         summary=_summary(total, write=total / 4 if write else None, p99=round(1e6 / total, 2)))
        for moment, total in zip(moments, totals, strict=True)
    ]  # fmt: skip
    runs = Run.objects.bulk_create(runs)
    _keep_results(disk)
    return runs


def _points(points: dict) -> set[tuple]:
    return set(zip(points["x"], points["y"], points["run"], strict=True))


def _point(run: Run, y: float) -> tuple:
    return (timeseries.epoch_ms(run.finished_at), y, run.pk)


def test_the_series_hold_every_runs_own_numbers_when_they_fit(owner_client, disk):
    rng = random.Random(3)
    mixed = ProfileFactory(team=disk.team, name="4k randrw", rw="randrw")
    start = timezone.now() - timedelta(days=20)
    moments = [start + timedelta(hours=7 * i, seconds=rng.randint(0, 999)) for i in range(60)]
    totals = [round(rng.uniform(100, 9000), 3) for _ in moments]
    runs = _runs_at(disk, moments[::2], totals[::2], profile=mixed, write=True)
    runs += _runs_at(disk, moments[1::2], totals[1::2], name="import: nightly.json")
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all")

    assert data["runs"] == 60 and [s["runs"] for s in data["series"]] == [30, 30]
    for series in data["series"]:
        mine = sorted((r for r in runs if r.profile_name == series["profile"]["name"]), key=lambda r: r.finished_at)
        total = series["iops"]["total"]
        # What the summaries hold, to the hundredth, every run in time order.
        assert total["run"] == [r.pk for r in mine] and series["downsampled"] is False
        assert total["x"] == [timeseries.epoch_ms(r.finished_at) for r in mine]
        assert total["y"] == [round(r.summary["total"]["iops"], 2) for r in mine]
        assert total["efficiency"] == [round(round(r.summary["total"]["iops"], 2) / 4000, 4) for r in mine]
        for direction in ("read", "write"):
            expected = [(r.pk, round(r.summary[direction]["iops"], 2)) for r in mine if r.summary[direction]]
            assert list(zip(series["iops"][direction]["run"], series["iops"][direction]["y"], strict=True)) == expected
            p99 = series["latency_us"][direction]["p99"]
            assert p99["y"] == [r.summary[direction]["clat_us"]["p99"] for r in mine if r.summary[direction]]


def test_a_range_of_many_runs_is_drawn_from_each_days_lowest_and_highest_run(owner_client, disk, from_days):
    rng = random.Random(7)
    start = datetime.combine(timezone.now().date() - timedelta(days=70), datetime.min.time(), tzinfo=UTC)
    moments = sorted(start + timedelta(days=day, seconds=rng.randint(0, 86_399)) for day in range(60) for _ in range(5))
    runs = _runs_at(disk, moments, [float(rng.randint(100, 9000)) for _ in moments])
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all&points=200")

    (series,) = data["series"]
    assert data["runs"] == series["runs"] == 300 and series["downsampled"] is True
    total, p99 = series["iops"]["total"], series["latency_us"]["read"]["p99"]
    real = {_point(r, r.summary["total"]["iops"]) for r in runs}
    assert _points(total) <= real and 120 <= len(total["x"]) <= 2 * 60 + 2
    assert total["x"] == sorted(total["x"]) and len(set(total["run"])) == len(total["run"])
    assert total["efficiency"] == [round(y / 4000, 4) for y in total["y"]] and set(total["limit"]) == {4000}
    for day in range(60):
        mine = [r for r in runs if (r.finished_at - start).days == day]
        for points, value in ((total, lambda r: r.summary["total"]["iops"]),
                              (p99, lambda r: r.summary["read"]["clat_us"]["p99"])):  # fmt: skip
            lowest, highest = min(mine, key=value), max(mine, key=value)
            assert {_point(lowest, value(lowest)), _point(highest, value(highest))} <= _points(points)
    assert (total["run"][0], total["run"][-1]) == (runs[0].pk, runs[-1].pk)
    assert series["limits"] == {"baseline_iops": 4000, "burst_iops": None}


def _from_results_and_days(client: Client, disk: Disk, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    """The disk's all-time chart drawn from its result rows, then from its days."""
    url = f"/disks/{disk.pk}/series.json?range=all&points=200"
    monkeypatch.setattr(chart_series, "DAY_BUCKETS_ABOVE", 10**9)
    from_results = _get(client, url)
    monkeypatch.setattr(chart_series, "DAY_BUCKETS_ABOVE", 50)
    return from_results, _get(client, url)


def test_the_days_and_the_results_draw_the_same_series_when_no_day_has_two_runs(owner_client, disk, monkeypatch):
    mixed = ProfileFactory(team=disk.team, name="4k randrw", rw="randrw")
    start = timezone.now() - timedelta(days=200)
    moments = [start + timedelta(days=i, minutes=7 * i) for i in range(80)]
    _runs_at(disk, moments, [1000.0 + (i * 389) % 700 for i in range(80)], profile=mixed, write=True)
    _runs_at(disk, moments[:70], [500.0 + (i * 97) % 300 for i in range(70)], name="import: 64k.json")
    from_results, from_days = _from_results_and_days(owner_client, disk, monkeypatch)

    assert from_days == from_results
    assert [len(s["iops"]["total"]["x"]) for s in from_days["series"]] == [80, 70]


def test_more_days_than_the_points_allow_are_merged_keeping_the_extremes(owner_client, disk, from_days):
    rng = random.Random(9)
    start = datetime.combine(timezone.now().date() - timedelta(days=300), datetime.min.time(), tzinfo=UTC)
    moments = [start + timedelta(days=day, hours=hour) for day in range(200) for hour in (3, 15)]
    totals = [float(rng.randint(1000, 2000)) for _ in moments]
    totals[101], totals[333] = 7.0, 99_999.0
    runs = _runs_at(disk, moments, totals)
    (series,) = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all&points=40")["series"]

    total = series["iops"]["total"]
    for points in [*series["iops"].values(), *series["latency_us"]["read"].values()]:
        assert len(points["x"]) <= 40
    assert {_point(runs[101], 7.0), _point(runs[333], 99_999.0)} <= _points(total)
    assert _points(total) <= {_point(r, t) for r, t in zip(runs, totals, strict=True)}
    # 200 days in 19 buckets of 11: each keeps its lowest and highest run.
    for bucket in range(19):
        mine = [(r, t) for r, t in zip(runs, totals, strict=True) if (r.finished_at - start).days // 11 == bucket]
        lowest, highest = min(mine, key=lambda p: p[1]), max(mine, key=lambda p: p[1])
        assert {_point(*lowest), _point(*highest)} <= _points(total)
    assert total["x"] == sorted(total["x"]) and (total["run"][0], total["run"][-1]) == (runs[0].pk, runs[-1].pk)


def test_a_range_that_cuts_days_draws_only_its_own_runs_and_keeps_their_extremes(owner_client, disk, from_days):
    start = datetime.combine(timezone.now().date() - timedelta(days=40), datetime.min.time(), tzinfo=UTC)
    moments = [start + timedelta(hours=2 * i) for i in range(12 * 20)]
    totals = [1000.0 + (i * 53) % 400 for i in range(len(moments))]
    first, last = start + timedelta(days=3, hours=10), start + timedelta(days=15, hours=13, minutes=30)
    # Extremes just outside the range, and inside it on the days it cuts.
    for moment, total in ((first - timedelta(hours=2), 1.0), (last + timedelta(minutes=30), 1e6),
                          (first + timedelta(hours=4), 2.0), (last - timedelta(hours=1, minutes=30), 9e5)):  # fmt: skip
        totals[moments.index(moment)] = total
    runs = _runs_at(disk, moments, totals)
    query = f"range=custom&from={first.isoformat()}&to={last.isoformat()}&points=40".replace("+00:00", "Z")
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?{query}")

    inside = [(r, t) for r, t in zip(runs, totals, strict=True) if first <= r.finished_at <= last]
    assert data["runs"] == len(inside) == 12 * 12 + 2
    total = data["series"][0]["iops"]["total"]
    assert _points(total) <= {_point(r, t) for r, t in inside}
    assert (min(total["y"]), max(total["y"])) == (2.0, 9e5)
    assert (total["run"][0], total["run"][-1]) == (inside[0][0].pk, inside[-1][0].pk)


def test_a_range_of_many_runs_on_few_days_is_drawn_from_every_run_unless_they_are_too_many(
    owner_client, disk, from_days, monkeypatch
):
    moments = [timezone.now() - timedelta(minutes=5 * i) for i in range(300)]
    _runs_at(disk, moments, [1000.0 + i for i in range(300)])
    url = f"/disks/{disk.pk}/series.json?range=all&points=400"
    # 300 runs five minutes apart: their days would give a handful of points where 300 fit.
    (series,) = _get(owner_client, url)["series"]
    assert len(series["iops"]["total"]["x"]) == 300 and series["downsampled"] is False
    monkeypatch.setattr(chart_series, "DAYS_ALWAYS_ABOVE", 299)
    (series,) = _get(owner_client, url)["series"]
    # 25 hours touch three UTC days at most: two runs each, and the first and last.
    assert len(series["iops"]["total"]["x"]) <= 3 * 2 + 2 and series["downsampled"] is True


def test_a_run_deleted_after_its_day_was_written_leaves_the_chart_answering(owner_client, disk, from_days):
    start = timezone.now() - timedelta(days=90)
    runs = _runs_at(disk, [start + timedelta(hours=7 * i) for i in range(200)], [1000.0 + i % 13 for i in range(200)])
    # The admin deletes runs without rewriting their day: the first and last run have no result any more, and
    # the days still count (and may draw) them until a run of that day is recorded again.
    Run.objects.filter(pk__in=[runs[0].pk, runs[-1].pk]).delete()
    (series,) = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all&points=100")["series"]
    assert series["runs"] == 200 and 0 < len(series["iops"]["total"]["x"]) <= 100
    assert series["limits"] == {"baseline_iops": None, "burst_iops": None}


def _flagged(runs: list[Run]) -> dict[int, tuple[bool | None, int]]:
    """Gives the runs steady states and warnings that vary (steady, not steady, not checked; 0 to 3 warnings),
    stores them as RunResult.record does, and answers each run's (steady, warnings) as the chart should draw it."""
    states = [{"state": "steady"}, {"state": "not_steady"}, None]
    for i, run in enumerate(runs):
        run.steady_state, run.warnings = states[i % 3], [f"warning {n}" for n in range(i % 4)]
    Run.objects.bulk_update(runs, ["steady_state", "warnings"])
    _keep_results(runs[0].disk)
    return {run.pk: ([True, False, None][i % 3], i % 4) for i, run in enumerate(runs)}


def _drawn_flags(data: dict) -> list[tuple[int, bool | None, int]]:
    """(run, steady, warnings) of every point of every series drawn."""
    return [
        point
        for series in data["series"]
        for points in [*series["iops"].values(), *(p for d in series["latency_us"].values() for p in d.values())]
        for point in zip(points["run"], points["steady"], points["warnings"], strict=True)
    ]


def test_a_chart_drawn_from_days_keeps_each_points_steady_flag_and_warnings_and_its_marks(
    owner_client, disk, from_days
):
    rng = random.Random(4)
    start = timezone.now() - timedelta(days=120)
    moments = [start + timedelta(days=day, hours=hour) for day in range(100) for hour in (2, 9, 17)]
    runs = _runs_at(disk, moments, [float(rng.randint(500, 3000)) for _ in moments], write=True)
    flags = _flagged(runs)
    Annotation.objects.create(team=disk.team, disk=disk, at=moments[40], text="kernel upgrade")
    ChangePoint.objects.create(
        team=disk.team, disk=disk, metric="iops", run=runs[150], profile_name="4k randread", at=moments[150],
        at_ms=timeseries.epoch_ms(moments[150]), before=2000, after=1200, change_percent=-40, p_value=0.001,
        runs_before=150, runs_after=150, direction="worse",
    )  # fmt: skip
    data = _get(owner_client, f"/disks/{disk.pk}/series.json?range=all&points=400")

    (series,) = data["series"]
    assert series["downsampled"] and len(series["iops"]["total"]["x"]) < len(runs)
    drawn = _drawn_flags(data)
    assert [(steady, warnings) for run, steady, warnings in drawn] == [flags[run] for run, _, _ in drawn]
    # Every kind of flag is among the points: the comparison above is not of nulls and zeros alone.
    assert {steady for _, steady, _ in drawn} == {True, False, None} and {w for _, _, w in drawn} == {0, 1, 2, 3}
    assert [(c["run"], c["metric"], c["change_percent"]) for c in data["marks"]["changes"]] == [
        (runs[150].pk, "iops", -40)
    ]
    assert [(a["text"], a["x"]) for a in data["marks"]["annotations"]] == [
        ("kernel upgrade", round(moments[40].timestamp() * 1000))
    ]


def test_the_days_and_the_results_draw_the_same_flags_when_no_day_has_two_runs(owner_client, disk, monkeypatch):
    start = timezone.now() - timedelta(days=200)
    runs = _runs_at(disk, [start + timedelta(days=i, minutes=7 * i) for i in range(80)],
                    [1000.0 + (i * 389) % 700 for i in range(80)], write=True)  # fmt: skip
    flags = _flagged(runs)
    from_results, from_days = _from_results_and_days(owner_client, disk, monkeypatch)

    assert from_days == from_results
    drawn = _drawn_flags(from_days)
    assert {run for run, _, _ in drawn} == set(flags)
    assert [(steady, warnings) for run, steady, warnings in drawn] == [flags[run] for run, _, _ in drawn]


def test_a_day_row_keeps_the_flags_of_the_runs_it_draws_when_a_run_is_recorded(disk):
    # Both on one UTC day whatever the hour the test runs at (yesterday's noon and an hour later): now-2h and
    # now-1h were two days between midnight and 02:00 UTC.
    noon = (timezone.now() - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    (first, second) = _runs_at(disk, [noon, noon + timedelta(hours=1)], [3000.0, 1000.0])
    second.steady_state, second.warnings = {"state": "not_steady"}, ["fresh device"]
    second.save()
    RunResult.record(second)
    (day,) = RunResultDay.objects.filter(disk=disk)
    # The total's early run is the higher (the first), its late run the lower (the second).
    assert (day.total_early_run, day.total_late_run) == (first.pk, second.pk)
    assert (day.total_early_steady, day.total_early_warnings) == (None, 0)
    assert (day.total_late_steady, day.total_late_warnings) == (False, 1)
    assert (day.write_early_steady, day.write_early_warnings) == (None, None)  # no write: no point, no flags


@pytest.mark.parametrize("query", ["range=all", "range=custom&from=2000-01-01T10:00Z&to=2099-01-01T05:00Z"])
def test_the_series_from_days_ask_a_constant_number_of_queries(owner_client, disk, from_days, query):
    other = ProfileFactory(team=disk.team, name="other", rw="randwrite")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            data = _get(owner_client, f"/disks/{disk.pk}/series.json?{query}&points=40")
        assert data["runs"] > 50 and any(s["downsampled"] for s in data["series"])
        return len(queries)

    start = timezone.now() - timedelta(days=100)
    _runs_at(disk, [start + timedelta(hours=9 * i) for i in range(60)], [1000.0 + i for i in range(60)])
    few = count()
    _runs_at(disk, [start + timedelta(hours=5 * i) for i in range(400)], [500.0 + i for i in range(400)], profile=other)
    # Ten since the day rows keep the steady flags and warning counts of the points they draw (an eleventh read
    # them by run before); 9 and 10: the change-point and annotation marks.
    assert count() == few <= 11


# ----------------------------------------------------------------------------------------- run series


def _run_with_samples(disk: Disk, samples: int, **summary_extra: Any) -> Run:
    (run,) = _runs(disk, 1, summary=_summary(3000.0, write=1000.0, **summary_extra))
    RunSample.objects.bulk_create(
        RunSample(run=run, t_s=float(t), read_iops=2000.0 + (t % 50), write_iops=1000.0 - (t % 30))
        for t in range(samples)
    )
    return run


def test_the_run_series_has_per_second_iops_the_limit_and_the_percentile_curve(owner_client, disk):
    run = _run_with_samples(disk, 120)
    data = _get(owner_client, f"/runs/{run.pk}/series.json")
    assert data["units"]["x"] == "s since the run started" and data["units"]["iops"] == "IO/s"
    samples = data["samples"]
    assert samples["count"] == 120 and samples["downsampled"] is False
    assert samples["read"]["x"][:2] == [0.0, 1.0] and samples["read"]["y"][:2] == [2000.0, 2001.0]
    assert samples["write"]["y"][1] == 999.0
    assert samples["total"]["y"][1] == 3000.0 and len(samples["total"]["x"]) == 120
    assert data["limits"]["baseline_iops"] == 4000
    assert data["result"] == {"total_iops": 3000.0, "total_printed": "3,000 IOPS", "efficiency": 0.75}
    assert data["percentiles"]["labels"] == ["p50", "p90", "p95", "p99", "p99.9", "max"]
    assert data["percentiles"]["read"] == [150.0, 400.0, 500.0, 900.0, 2500.0, 9000.0]
    assert data["histogram"] is None


def test_a_long_runs_samples_are_downsampled_to_2000_points_keeping_the_ends(owner_client, disk):
    run = _run_with_samples(disk, 5000)
    RunSample.objects.filter(run=run, t_s=2500).update(read_iops=1.0)
    samples = _get(owner_client, f"/runs/{run.pk}/series.json")["samples"]
    assert samples["count"] == 5000 and samples["downsampled"] is True
    for direction in ("read", "write", "total"):
        points = samples[direction]
        assert len(points["x"]) == len(points["y"]) == MAX_POINTS
        assert points["x"][0] == 0.0 and points["x"][-1] == 4999.0
    read = dict(zip(samples["read"]["x"], samples["read"]["y"], strict=True))
    assert read[2500.0] == 1.0


def test_json_plus_bins_become_a_log_spaced_histogram_in_microseconds(owner_client, disk):
    bins = {"read": {"1000": 10, "2000": 30, "10000000": 60}, "write": {"50000": 5}}
    run = _run_with_samples(disk, 3, latency_bins_ns=bins)
    histogram = _get(owner_client, f"/runs/{run.pk}/series.json")["histogram"]
    edges = histogram["edges_us"]
    assert len(edges) == 41 and edges[0] == 1.0 and edges[-1] == 10000.0
    ratios = [b / a for a, b in itertools.pairwise(edges)]
    assert max(ratios) == pytest.approx(min(ratios), rel=1e-3)
    assert histogram["read"]["total"] == 100 and sum(histogram["read"]["counts"]) == 100
    assert histogram["read"]["counts"][0] == 10 and histogram["read"]["counts"][-1] == 60
    assert sum(histogram["read"]["percent"]) == pytest.approx(100)
    assert histogram["write"]["counts"].count(5) == 1


def test_a_run_without_samples_or_results_answers_with_empty_series(owner_client, disk):
    (run,) = _runs(disk, 1, state=Run.State.RUNNING, finished_at=None, summary=None)
    data = _get(owner_client, f"/runs/{run.pk}/series.json")
    assert data["run"]["final"] is False
    empty = {"x": [], "y": []}
    assert data["samples"] == {"count": 0, "downsampled": False, "read": empty, "write": empty, "total": empty}
    assert data["percentiles"]["read"] is None and data["result"]["efficiency"] is None


def test_the_run_series_asks_a_constant_number_of_queries(owner_client, disk):
    small, large = _run_with_samples(disk, 10), _run_with_samples(disk, 3000)

    def count(run: Run) -> int:
        with CaptureQueriesContext(connection) as queries:
            _get(owner_client, f"/runs/{run.pk}/series.json")
        assert not any("raw_output" in q["sql"] for q in queries)
        return len(queries)

    # 6: the run, its samples, its host's telemetry seconds, and the session's own.
    assert count(small) == count(large) <= 6


def test_another_teams_run_series_is_a_404(stranger_client, disk):
    run = _run_with_samples(disk, 3)
    assert stranger_client.get(f"/runs/{run.pk}/series.json").status_code == 404
