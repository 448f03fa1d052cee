"""What a finished run keeps for the disk chart (RunResult, RunResultDay), and where its samples live."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.forms.models import model_to_dict

from jobs import timeseries
from jobs.imports import importing
from jobs.models import Disk, Profile, Run, RunResult, RunResultDay, RunSample
from jobs.runs import queueing
from jobs.timeseries import SERIES
from tests.builders import disk_at_migration, own_database, quick_profile, team_with_host, wait_final
from tests.factories import ProfileFactory, RunFactory

FIXTURES = Path(__file__).parent.parent / "fixtures"
IMPORTED = [FIXTURES / "fio-3.33-randrw.json", FIXTURES / "fio-3.33-randread-jsonplus.json",
            FIXTURES / "fio-2.15-randrw.json", FIXTURES / "ndisk_4proc_random_direct.txt"]  # fmt: skip


def _import(disk: Disk, path: Path, at: datetime | None = None) -> Run:
    return importing.import_result(disk, path.read_text(), name=path.name, at=at)


def _expected(summary: dict, direction: str, *path: str) -> float | None:
    value = summary.get(direction)
    for key in path:
        value = (value or {}).get(key)
    return None if value is None else round(value, 2)


def _assert_kept(result: RunResult, summary: dict) -> None:
    assert result.total_iops == _expected(summary, "total", "iops") and result.total_iops > 0
    assert result.bw_bytes_per_s == round(summary["total"]["bw_bytes_per_s"])
    for direction in ("read", "write"):
        assert getattr(result, f"{direction}_iops") == _expected(summary, direction, "iops")
        for percentile in ("p50", "p99", "p99_9"):
            kept = getattr(result, f"{direction}_{percentile}_us")
            assert kept == _expected(summary, direction, "clat_us", percentile)
    assert result.block_size_bytes == summary["block_size_bytes"]


@pytest.mark.parametrize("path", IMPORTED, ids=lambda p: p.name)
def test_an_imported_result_is_kept_as_the_numbers_of_its_summary(disk, path):
    at = datetime(2026, 5, 1, 2, 30, 0, 123_456, tzinfo=UTC)
    run = _import(disk, path, at=at)
    parsed = importing.parse_import(path.read_text()).summary
    result = RunResult.objects.get(run=run)

    _assert_kept(result, parsed)
    named = importing.series_name(importing.parse_import(path.read_text()), path.name)  # its workload
    assert (result.disk_id, result.profile_id, result.profile_name) == (disk.pk, None, named)
    assert (result.finished_at, result.finished_ms) == (at, 1_777_602_600_123)
    assert result.limit_iops == run.limits_snapshot["effective_iops"] == 4000
    (day,) = RunResultDay.objects.filter(disk=disk)
    # 2026-05-01 is day 20,574 of the Unix epoch.
    assert (day.day, day.runs, day.first_run, day.last_run) == (20574, 1, run.pk, run.pk)
    assert day.total_early_run == day.total_late_run == run.pk and day.total_early == result.total_iops


def test_a_failed_import_keeps_no_result(disk):
    run = _import(disk, FIXTURES / "fio-3.33-enospc.json")
    assert run.state == Run.State.FAILED
    assert not RunResult.objects.exists() and not RunResultDay.objects.exists()


def test_per_second_samples_are_kept_as_run_samples_and_no_longer_inside_the_summary(disk, owner_client):
    path = FIXTURES / "fio-3.33-randrw-status-interval.json"
    run = _import(disk, path)
    parsed = importing.parse_import(path.read_text()).summary["samples"]

    run.refresh_from_db()
    assert "samples" not in run.summary and run.summary["total"]["iops"] > 0
    stored = list(RunSample.objects.filter(run=run).order_by("t_s").values("t_s", "read_iops", "write_iops"))
    assert stored == parsed and len(stored) >= 2
    # The run page's chart reads them from there.
    samples = owner_client.get(f"/runs/{run.pk}/series.json").json()["samples"]
    assert samples["count"] == len(parsed)
    assert samples["read"]["y"] == [s["read_iops"] for s in parsed]


def test_a_run_without_a_limit_snapshot_is_compared_with_the_disks_limits_when_it_is_recorded(disk):
    run = _import(disk, FIXTURES / "fio-3.33-randrw.json")
    Run.objects.filter(pk=run.pk).update(limits_snapshot={"error": "the catalog had no such disk type then"})
    disk.spec_iops = 3000
    disk.save()
    RunResult.record(Run.objects.get(pk=run.pk))
    assert RunResult.objects.get(run=run).limit_iops == disk.limits(block_size=4096).iops == 3000


def test_only_succeeded_runs_are_recorded_and_recording_twice_keeps_one_row(disk):
    run = _import(disk, FIXTURES / "fio-3.33-randrw.json")
    RunResult.record(run)
    RunResult.record(run)
    assert RunResult.objects.count() == RunResultDay.objects.count() == 1
    Run.objects.filter(pk=run.pk).update(state=Run.State.CANCELLED)
    other = RunFactory(disk=disk, running=True, summary=run.summary)
    RunResult.record(other)
    assert list(RunResult.objects.values_list("run_id", flat=True)) == [run.pk]


def _day_rows(disk: Disk) -> list[dict]:
    rows = [model_to_dict(day, exclude=["id"]) for day in RunResultDay.objects.filter(disk=disk)]
    return sorted(rows, key=lambda row: (str(row["profile"]), row["profile_name"], row["day"]))


def test_recording_runs_one_by_one_gives_the_days_a_rebuild_from_all_results_gives(disk):
    rng = random.Random(11)
    profile = ProfileFactory(team=disk.team, name="4k randrw", rw="randrw")
    start = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
    summary = importing.parse_import((FIXTURES / "fio-3.33-randrw.json").read_text()).summary
    for i in range(120):
        if i == 60:
            # Renamed halfway: its runs keep the profile id, under either name.
            Profile.objects.filter(pk=profile.pk).update(name="4k randrw QD32")
            profile.refresh_from_db()
        scale = rng.choice([0.2, 1.0, 1.0, 1.7])
        changed = summary | {"total": {"iops": summary["total"]["iops"] * scale, "bw_bytes_per_s": 1.0},
                             "read": summary["read"] | {"iops": rng.uniform(10, 90)}}  # fmt: skip
        run = RunFactory(
            disk=disk, profile=profile if i % 3 else None, profile_name=profile.name if i % 3 else "import: x.json",
            succeeded=True, finished_at=start + timedelta(minutes=37 * i + rng.randint(0, 30)),
            summary=changed, limits_snapshot={"iops": 4000.0},
        )  # fmt: skip
        RunResult.record(run)
    one_by_one = _day_rows(disk)
    RunResultDay.rebuild(disk)

    assert _day_rows(disk) == one_by_one
    assert sum(row["runs"] for row in one_by_one) == 120 and len({row["day"] for row in one_by_one}) == 4
    # Each day row holds that day's lowest and highest total of its profile id and name, in time order.
    for row in one_by_one:
        results = RunResult.objects.filter(
            disk=disk, profile_id=row["profile"], profile_name=row["profile_name"],
            finished_ms__gte=row["day"] * timeseries.DAY_MS, finished_ms__lt=(row["day"] + 1) * timeseries.DAY_MS,
        ).order_by("finished_ms")  # fmt: skip
        totals = [r.total_iops for r in results]
        assert len(totals) == row["runs"]
        assert {row["total_early"], row["total_late"]} == {min(totals), max(totals)}
        assert row["total_early_ms"] <= row["total_late_ms"]
        assert (row["first_run"], row["last_run"]) == (results.first().run_id, results.last().run_id)


def _packed_and_columns(disk: Disk) -> tuple[list[list], list[list]]:
    """Each stored day's packed points unpacked, and the same fields read from its columns."""
    days = list(RunResultDay.objects.filter(disk=disk).order_by("profile_name", "day"))
    (columns,) = timeseries.unpack_day_points([day.points for day in days], [(0, len(days))])
    packed = [list(day) for day in zip(*columns, strict=True)]
    return packed, [[getattr(day, field) for field in timeseries.DAY_POINTS] for day in days]


def test_a_days_packed_points_are_its_columns_as_runs_are_recorded_edited_deleted_and_rebuilt(disk, rf, owner):
    from django.contrib import admin

    from jobs.admin import RunAdmin

    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    runs = []
    stamps = [("steady", [], 1000.0), ("not_steady", ["w"] * 2, 2000.0), (None, ["w"], 1500.0), ("steady", [], 1200.0)]
    for i, (state, warnings, total) in enumerate(stamps):
        summary = {"total": {"iops": total}, "read": {"iops": 400.5 * (i + 1), "clat_us": {"p99": 9.0}}}
        runs.append(RunFactory(disk=disk, profile_name="p", succeeded=True, summary=summary, warnings=warnings,
                               finished_at=start + timedelta(hours=7 * i), limits_snapshot={"iops": 4000.0},
                               steady_state={"state": state} if state else None))  # fmt: skip
        RunResult.record(runs[-1])
    packed, columns = _packed_and_columns(disk)
    assert len(packed) == 2 and packed == columns
    assert {type(v) for row in packed for v in row} == {int, float, bool, type(None)}
    assert [timeseries.DAY_POINTS[i] for i, v in enumerate(packed[0]) if v is False] == ["total_late_steady"]

    run_admin, request = RunAdmin(Run, admin.site), rf.post("/admin/")
    request.user = owner
    runs[1].warnings, runs[1].finished_at = ["w"] * 5, start + timedelta(days=1, hours=1)  # edited, moved a day on
    run_admin.save_model(request, runs[1], form=None, change=True)
    run_admin.delete_model(request, runs[3])
    packed, columns = _packed_and_columns(disk)
    assert len(packed) == 2 and packed == columns and 5 in packed[1]
    RunResultDay.rebuild(disk)
    assert _packed_and_columns(disk) == (packed, columns)


def test_a_deleted_profiles_results_stay_on_the_chart_under_its_name(disk, owner_client):
    profile = ProfileFactory(team=disk.team, name="gone soon", rw="randread")
    run = RunFactory(disk=disk, profile=profile, profile_name=profile.name, succeeded=True,
                     finished_at=datetime.now(UTC), summary={"total": {"iops": 5.0}}, recorded=True)  # fmt: skip
    profile.delete()
    (series,) = owner_client.get(f"/disks/{disk.pk}/series.json").json()["series"]
    assert series["profile"] == {"key": "gone soon", "id": None, "name": "gone soon"}
    assert series["iops"]["total"]["run"] == [run.pk]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_collected_fio_run_is_recorded_with_its_samples_apart(fio_installed, sshd, worker, tmp_path):
    team, host = team_with_host(sshd)
    target = tmp_path / "bench"
    target.mkdir()
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(target), disk_type="custom", spec_iops=50000)
    run = wait_final(queueing.request_run(disk, quick_profile(team)))

    assert run.state == Run.State.SUCCEEDED, run.explanation
    assert "samples" not in run.summary and RunSample.objects.filter(run=run).count() >= 1
    result = RunResult.objects.get(run=run)
    _assert_kept(result, run.summary)
    assert result.limit_iops == 50000 and RunResultDay.objects.get(disk=disk).last_run == run.pk


# ----------------------------------------------------------------------------------------- migration 0005

BEFORE, AFTER = [("jobs", "0004_run_snapshot_at_launch")], [("jobs", "0005_run_results")]


@pytest.mark.slow  # shared: its own database migrated from nothing (tests.builders.own_database)
@pytest.mark.django_db(transaction=True)
def test_migration_0005_fills_the_results_of_stored_runs_and_moves_their_samples_out_of_the_summaries():
    summary = importing.parse_import((FIXTURES / "fio-3.33-randrw-status-interval.json").read_text()).summary
    with own_database():
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        team = old.get_model("jobs", "Team").objects.create(name="t")
        host = old.get_model("jobs", "Host").objects.create(team=team, name="h", address="x", username="u")
        disk = old.get_model("jobs", "Disk").objects.create(team=team, host=host, label="d", target_path="/d",
                                                            disk_type="custom", spec_iops=4000)  # fmt: skip
        Run, Sample = old.get_model("jobs", "Run"), old.get_model("jobs", "RunSample")
        finished = datetime(2026, 5, 1, 2, 30, tzinfo=UTC)

        def run(state: str, **fields: object) -> int:
            return Run.objects.create(team=team, disk=disk, state=state, summary=summary, profile_name="p",
                                      finished_at=finished, **fields).pk  # fmt: skip

        with_samples = run("succeeded", limits_snapshot={"iops": 6000.0})
        Sample.objects.bulk_create(Sample(run_id=with_samples, t_s=s["t_s"], read_iops=s["read_iops"],
                                          write_iops=s["write_iops"]) for s in summary["samples"])  # fmt: skip
        # Older, or written by hand: samples in the summary only; no snapshot.
        summary_only = run("succeeded")
        failed = run("failed")

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        Run, Sample = new.get_model("jobs", "Run"), new.get_model("jobs", "RunSample")
        Result, Day = new.get_model("jobs", "RunResult"), new.get_model("jobs", "RunResultDay")

        assert all("samples" not in r.summary for r in Run.objects.all())
        for pk in (with_samples, summary_only, failed):
            assert Sample.objects.filter(run_id=pk).count() == len(summary["samples"]) >= 2
        assert sorted(Result.objects.values_list("run_id", flat=True)) == sorted([with_samples, summary_only])
        results = {r.run_id: r for r in Result.objects.all()}
        _assert_kept(results[with_samples], summary)
        assert (results[with_samples].limit_iops, results[summary_only].limit_iops) == (6000.0, 4000.0)
        assert results[with_samples].finished_ms == timeseries.epoch_ms(finished)
        (day,) = Day.objects.all()
        assert (day.runs, day.first_run, day.last_run) == (2, with_samples, summary_only)
        assert day.total_early == day.total_late == results[with_samples].total_iops
        assert day.total_early_run == day.total_late_run == with_samples
        assert {f"{name}_early" for name in SERIES} <= {f.name for f in Day._meta.get_fields()}


def test_admin_edits_and_deletes_keep_the_chart_tables_in_step(disk, rf, owner):
    from django.contrib import admin

    from jobs.admin import RunAdmin

    first = importing.import_result(disk, (FIXTURES / "fio-3.33-randrw.json").read_text(), name="a")
    second = importing.import_result(disk, (FIXTURES / "fio-3.33-randread-jsonplus.json").read_text(), name="b")
    assert first.profile_name != second.profile_name  # two workloads, two series
    assert RunResultDay.objects.get(disk=disk, profile_name=first.profile_name).runs == 1
    run_admin, request = RunAdmin(Run, admin.site), rf.post("/admin/")
    request.user = owner
    first.state = Run.State.FAILED  # an admin marks a run failed: it leaves the chart
    run_admin.save_model(request, first, form=None, change=True)
    assert not RunResult.objects.filter(run=first).exists()
    assert not RunResultDay.objects.filter(disk=disk, profile_name=first.profile_name).exists()
    second.finished_at -= timedelta(days=3)  # moved in time: counted in its new day only
    run_admin.save_model(request, second, form=None, change=True)
    (day,) = RunResultDay.objects.filter(disk=disk, profile_name=second.profile_name)
    assert day.day == timeseries.epoch_ms(second.finished_at) // timeseries.DAY_MS
    run_admin.delete_model(request, second)
    assert not RunResultDay.objects.filter(disk=disk).exists() and not RunResult.objects.exists()


@pytest.mark.slow  # shared: its own database migrated from nothing (tests.builders.own_database)
@pytest.mark.django_db(transaction=True)
def test_migration_0024_packs_the_chart_fields_of_the_stored_days_as_a_recorded_day_packs_them():
    before, after = [("jobs", "0023_day_point_flags")], [("jobs", "0024_day_points_packed")]
    with own_database():
        old, disk = disk_at_migration(before)
        at = datetime(2026, 5, 1, 2, 30, tzinfo=UTC)
        ms = timeseries.epoch_ms(at)
        # The total drawn from runs 11 (steady, 2 warnings) and 12 (not checked); no write was measured.
        old.get_model("jobs", "RunResultDay").objects.create(
            disk=disk, profile_name="p", day=timeseries.utc_day(ms), runs=2, first_run=11, last_run=12, last_ms=ms,
            total_early=2500.25, total_early_run=11, total_early_ms=ms - 60_000, total_early_steady=True,
            total_early_warnings=2, total_early_limit=4000.0, total_late=3000.0, total_late_run=12,
            total_late_ms=ms, total_late_warnings=0, read_early=1.5, read_early_run=11, read_early_ms=ms - 60_000,
            read_early_steady=False, read_early_warnings=2,
        )  # fmt: skip

        MigrationExecutor(connection).migrate(after)
        (day,) = RunResultDay.objects.filter(disk_id=disk.pk)
        (columns,) = timeseries.unpack_day_points([day.points], [(0, 1)])
        packed = [value for (value,) in columns]
        assert packed == [getattr(day, field) for field in timeseries.DAY_POINTS]
        fields = dict(zip(timeseries.DAY_POINTS, packed, strict=True))
        assert (fields["total_early"], fields["total_early_steady"], fields["total_early_warnings"]) == (2500.25, True,
                                                                                                       2)  # fmt: skip
        assert (fields["total_late_run"], fields["total_late_steady"], fields["total_late_limit"]) == (12, None, None)
        assert (fields["read_early_steady"], fields["write_late"]) == (False, None)
        assert bytes(day.points) == timeseries.pack_day_points(fields)


@pytest.mark.slow  # shared: its own database migrated from nothing (tests.builders.own_database)
@pytest.mark.django_db(transaction=True)
def test_migration_0023_gives_the_stored_days_the_flags_of_the_runs_they_draw():
    before, after = [("jobs", "0022_share_link_time_zone")], [("jobs", "0023_day_point_flags")]
    with own_database():
        old, disk = disk_at_migration(before)
        team = disk.team
        Run, Result, Day = (old.get_model("jobs", name) for name in ("Run", "RunResult", "RunResultDay"))
        at = datetime(2026, 5, 1, 2, 30, tzinfo=UTC)
        runs = []
        for minutes, steady, warnings in ((0, True, 0), (10, False, 2), (20, None, 1)):
            finished = at + timedelta(minutes=minutes)
            run = Run.objects.create(team=team, disk=disk, state="succeeded", profile_name="p", finished_at=finished)
            Result.objects.create(run=run, disk=disk, profile_name="p", finished_at=finished, steady=steady,
                                  finished_ms=timeseries.epoch_ms(finished), warning_count=warnings)  # fmt: skip
            runs.append(run.pk)
        # The total's lowest run first, its highest last; no write was measured.
        Day.objects.create(disk=disk, profile_name="p", day=timeseries.utc_day(timeseries.epoch_ms(at)), runs=3,
                           first_run=runs[0], last_run=runs[2], last_ms=timeseries.epoch_ms(at),
                           total_early_run=runs[1], total_late_run=runs[2], read_early_run=runs[0],
                           read_late_run=runs[0])  # fmt: skip

        MigrationExecutor(connection).migrate(after)
        # The days as 0023 left them (later migrations add columns the model of today reads).
        then = MigrationExecutor(connection).loader.project_state(after).apps.get_model("jobs", "RunResultDay")
        (day,) = then.objects.filter(disk_id=disk.pk)
        assert (day.total_early_steady, day.total_early_warnings) == (False, 2)
        assert (day.total_late_steady, day.total_late_warnings) == (None, 1)
        assert (day.read_early_steady, day.read_early_warnings) == (True, 0) == (day.read_late_steady, 0)
        assert (day.write_early_steady, day.write_early_warnings) == (None, None)
