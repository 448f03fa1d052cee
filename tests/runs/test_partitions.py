"""Ten years of history (issue 34): the per-second tables partitioned by month on PostgreSQL (jobs/models/partitions.py,
migration 0039), retention dropping a month whole; SQLite as before. The PostgreSQL tests run in a session whose
DATABASE_URL names a PostgreSQL server, and are skipped on SQLite."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from jobs.models import HostSample, Run, RunSample, partitions
from jobs.runs import retention
from tests.builders import disk_at_migration
from tests.factories import RunFactory, fio_summary

on_postgresql = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="partitions are PostgreSQL's (DATABASE_URL=postgres://...)"
)
SECONDS = [{"t_s": float(t), "read_iops": 1000.0 + t, "write_iops": None} for t in range(1, 31)]


@pytest.fixture(autouse=True)
def _nothing_remembered():
    # A partition made in a test's rolled-back transaction is gone for the next test.
    partitions._made.clear()


def _run(disk, created: datetime, finished: datetime | None, state: str = Run.State.SUCCEEDED) -> Run:
    run = RunFactory(disk=disk, succeeded=True, summary=fio_summary())
    Run.objects.filter(pk=run.pk).update(created_at=created, started_at=created, finished_at=finished, state=state)
    run.refresh_from_db()
    return run


def _partition_of(model: type, **lookup) -> set[str]:
    table = model._meta.db_table
    where = " AND ".join(f"{column} = %s" for column in lookup)
    with connection.cursor() as cursor:
        sql = f"SELECT DISTINCT tableoid::regclass::text FROM {table} WHERE {where}"  # noqa: S608  (our names)
        cursor.execute(sql, list(lookup.values()))
        return {row[0] for row in cursor.fetchall()}


def _months_ago(n: int, day: int = 10) -> datetime:
    today = timezone.now().date()
    month = date(today.year, today.month, 1)
    for _ in range(n):
        month = (month - timedelta(days=1)).replace(day=1)
    return datetime(month.year, month.month, day, 12, tzinfo=UTC)


def test_a_sample_carries_its_run_s_creation_month_however_it_is_written(disk):
    run = _run(disk, datetime(2025, 3, 31, 23, 59, tzinfo=UTC), datetime(2025, 4, 1, 0, 1, tzinfo=UTC))
    RunSample.store(run, SECONDS[:3])
    RunSample.objects.bulk_create([RunSample(run_id=run.pk, t_s=99.0)])  # the run by id only, as benches write
    assert set(RunSample.objects.filter(run=run).values_list("month", flat=True)) == {date(2025, 3, 1)}


def test_stored_samples_read_back_as_given_and_a_second_store_replaces_the_first(disk):
    """RunSample.store writes its rows in one statement of its own (not through model instances): each value and
    each missing one comes back as given, on either database, and storing again (an import's, not a collection's
    first=True) replaces the rows rather than adding to them."""
    run = _run(disk, datetime(2025, 3, 31, 23, 59, tzinfo=UTC), datetime(2025, 4, 1, 0, 1, tzinfo=UTC))
    given = [*SECONDS[:3], {"t_s": 4.5, "read_iops": None, "write_iops": 123.25}, {"t_s": 5.0}]

    RunSample.store(run, given, first=True)
    RunSample.store(run, given)

    stored = list(RunSample.objects.filter(run=run).order_by("t_s").values("month", "t_s", "read_iops", "write_iops"))
    assert stored == [
        {"month": date(2025, 3, 1), "t_s": s["t_s"], "read_iops": s.get("read_iops"), "write_iops": s.get("write_iops")}
        for s in given
    ]
    RunSample.store(run, [])
    assert not RunSample.objects.filter(run=run).exists()


def test_on_sqlite_nothing_is_partitioned_and_retention_deletes_rows(disk):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's behaviour")
    old = _run(disk, _months_ago(3), _months_ago(3, day=11))
    RunSample.store(old, SECONDS)
    assert partitions.months("jobs_runsample") == [] and not partitions.partitioned()
    done = retention.prune(30)
    assert (done.runs, done.samples) == (1, len(SECONDS)) and not RunSample.objects.filter(run=old).exists()


@on_postgresql
def test_samples_are_stored_in_their_month_s_partition_and_the_next_month_is_made_ahead(disk):
    run = _run(disk, datetime(2025, 3, 31, 23, 59, tzinfo=UTC), datetime(2025, 4, 1, 0, 1, tzinfo=UTC))
    RunSample.store(run, SECONDS)
    assert _partition_of(RunSample, run_id=run.pk) == {"jobs_runsample_p202503"}
    assert {"jobs_runsample_p202503", "jobs_runsample_p202504"} <= {p for p, _ in partitions.months("jobs_runsample")}
    at = datetime(2025, 3, 31, 23, 59, 59, tzinfo=UTC)
    HostSample.objects.create(host=disk.host, at=at, data={"load1": 1.0})
    assert _partition_of(HostSample, host_id=disk.host_id) == {"jobs_hostsample_p202503"}


@on_postgresql
def test_rows_that_came_before_their_month_s_partition_are_moved_into_it_when_it_is_made(disk):
    run = _run(disk, datetime(2024, 7, 4, tzinfo=UTC), datetime(2024, 7, 4, 0, 2, tzinfo=UTC))
    RunSample.objects.bulk_create(RunSample(run=run, t_s=float(t), read_iops=5.0) for t in range(10))
    assert _partition_of(RunSample, run_id=run.pk) == {"jobs_runsample_default"}  # nothing failed for want of it
    partitions.ensure("jobs_runsample", date(2024, 7, 1))
    assert _partition_of(RunSample, run_id=run.pk) == {"jobs_runsample_p202407"}
    assert RunSample.objects.filter(run=run).count() == 10
    # The partition has the table's indexes, so a run's samples are read by index.
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs_runsample_p202407'")
        assert any("(run_id, t_s)" in row[0] for row in cursor.fetchall())


@on_postgresql
def test_a_run_page_its_series_and_its_exports_read_the_partitioned_samples(owner_client, disk):
    run = _run(disk, _months_ago(2), _months_ago(2, day=11))
    RunSample.store(run, SECONDS)
    assert owner_client.get(f"/runs/{run.pk}/").status_code == 200
    series = owner_client.get(f"/runs/{run.pk}/series.json").json()
    assert series["samples"]["count"] == len(SECONDS)
    csv = b"".join(owner_client.get(f"/runs/{run.pk}/samples.csv").streaming_content).decode().splitlines()
    assert len(csv) == 1 + len(SECONDS) and csv[1].startswith("1")


@on_postgresql
def test_retention_drops_a_month_past_the_cut_off_whole_and_deletes_the_rows_of_the_month_it_falls_in(disk):
    gone = _run(disk, _months_ago(4), _months_ago(4, day=11))  # its month is entirely past the cut-off
    held = _run(disk, _months_ago(6), None, state=Run.State.RUNNING)  # stuck: its month must stay
    held_out = _run(disk, _months_ago(6, day=12), _months_ago(6, day=13))  # finished, in the held month
    cutoff = timezone.now() - timedelta(days=30)
    partial = _run(disk, cutoff - timedelta(hours=1), cutoff - timedelta(minutes=30))  # its month straddles it
    recent = _run(disk, timezone.now() - timedelta(days=2), timezone.now() - timedelta(days=2))
    for run in (gone, held, held_out, partial, recent):
        RunSample.store(run, SECONDS)
    old_second, new_second = _months_ago(4), timezone.now() - timedelta(days=1)
    HostSample.objects.create(host=disk.host, at=old_second, data={})
    HostSample.objects.create(host=disk.host, at=new_second, data={})
    gone_part, held_part = (
        partitions.name("jobs_runsample", gone.created_at),
        partitions.name("jobs_runsample", held.created_at),
    )

    counted = retention.prune(30, dry_run=True)
    assert (counted.samples, counted.telemetry) == (3 * len(SECONDS), 1)  # dropped whole or row by row, once each
    assert RunSample.objects.count() == 5 * len(SECONDS)

    done = retention.prune(30)
    tables = {p for p, _ in partitions.months("jobs_runsample")}
    assert gone_part not in tables and held_part in tables
    assert partitions.name("jobs_hostsample", partitions.month_of(old_second)) not in {
        p for p, _ in partitions.months("jobs_hostsample")
    }
    assert (done.samples, done.telemetry, done.runs) == (3 * len(SECONDS), 1, 3)
    assert set(RunSample.objects.values_list("run_id", flat=True)) == {held.pk, recent.pk}
    assert list(HostSample.objects.values_list("at", flat=True)) == [new_second]
    for run in (gone, held_out, partial):
        run.refresh_from_db()
        assert run.pruned_at is not None and run.summary["total"]["iops"] > 0


@pytest.mark.slow  # shared: a walk of the schema back and forth
@pytest.mark.django_db(transaction=True)
def test_migration_0039_moves_the_stored_samples_into_month_partitions():
    before, after = [("jobs", "0038_run_verdict_alerts")], [("jobs", "0039_month_partitions")]
    try:
        old, disk = disk_at_migration(before)
        Run, Sample, Second = (old.get_model("jobs", name) for name in ("Run", "RunSample", "HostSample"))
        runs = {}
        for month in (date(2024, 1, 1), date(2025, 6, 1)):
            run = Run.objects.create(team=disk.team, disk=disk, state="succeeded", profile_name="p")
            Run.objects.filter(pk=run.pk).update(created_at=datetime(month.year, month.month, 15, tzinfo=UTC))
            Sample.objects.bulk_create(Sample(run_id=run.pk, t_s=float(t), read_iops=t) for t in range(1, 21))
            runs[run.pk] = month
        Second.objects.create(host_id=disk.host_id, at=datetime(2024, 1, 15, tzinfo=UTC), data={"load1": 2.0})
        ids = sorted(Sample.objects.values_list("id", flat=True))

        MigrationExecutor(connection).migrate(after)
        new = MigrationExecutor(connection).loader.project_state(after).apps
        Sample = new.get_model("jobs", "RunSample")
        assert sorted(Sample.objects.values_list("id", flat=True)) == ids
        for pk, month in runs.items():
            assert set(Sample.objects.filter(run_id=pk).values_list("month", flat=True)) == {month}
            if connection.vendor == "postgresql":
                assert _partition_of(Sample, run_id=pk) == {f"jobs_runsample_p{month:%Y%m}"}
        if connection.vendor == "postgresql":
            assert _partition_of(HostSample, host_id=disk.host_id) == {"jobs_hostsample_p202401"}
        # New rows take ids after the moved ones.
        (made,) = Sample.objects.bulk_create([Sample(run_id=next(iter(runs)), t_s=0.5, month=date(2024, 1, 1))])
        assert made.pk > ids[-1]
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
