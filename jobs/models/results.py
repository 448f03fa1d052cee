"""The narrow per-run results table and its per-day rollup the charts read (docs/decisions/0006)."""

from __future__ import annotations

import itertools
from typing import Any, Self

from django.db import models, transaction

from jobs import timeseries
from jobs.analysis import steady
from jobs.models.disks import Disk
from jobs.models.profiles import Profile
from jobs.models.runs import Run

# The most warnings a result counts (a small integer column; a list edited by hand could hold more).
WARNINGS_COUNTED = 1_000


class RunResult(models.Model):
    """What the disk chart draws of a succeeded run (timeseries.run_numbers), in plain columns.

    The chart of a disk with 100,000 runs cannot read every run's JSON summary, so `record` keeps these
    numbers beside the summary when a run succeeds, and migration 0005 filled them in for older runs. A run
    whose snapshot has no limit is compared with the disk's limits at its block size when the row is written."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="result")
    # The (disk, finished_at) index below serves lookups by disk too.
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="+", db_index=False)
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    profile_name = models.CharField(max_length=100, blank=True)
    finished_at = models.DateTimeField()
    finished_ms = models.BigIntegerField(help_text="finished_at in whole ms since the Unix epoch: the chart's x.")
    block_size_bytes = models.PositiveIntegerField(null=True, blank=True)
    total_iops = models.FloatField(null=True, blank=True)
    read_iops = models.FloatField(null=True, blank=True)
    write_iops = models.FloatField(null=True, blank=True)
    bw_bytes_per_s = models.PositiveBigIntegerField(null=True, blank=True)
    read_p50_us = models.FloatField(null=True, blank=True)
    read_p99_us = models.FloatField(null=True, blank=True)
    read_p99_9_us = models.FloatField(null=True, blank=True)
    write_p50_us = models.FloatField(null=True, blank=True)
    write_p99_us = models.FloatField(null=True, blank=True)
    write_p99_9_us = models.FloatField(null=True, blank=True)
    limit_iops = models.FloatField(null=True, blank=True, help_text="The run's baseline IOPS at its block size.")
    burst_iops = models.FloatField(null=True, blank=True)
    steady = models.BooleanField(null=True, blank=True, help_text="Steady state: yes, no, or not checked (empty).")
    # The chart marks a run with warnings without reading the runs table; the page brings their words.
    warning_count = models.PositiveSmallIntegerField(default=0, help_text="How many warnings the run carries.")
    # Is the number the disk's (Run.verdicts): yes (judged, no verdict), no (a verdict against it), or not judged
    # (empty); and the verdicts' kinds, comma-separated, for the chart's marks and filters.
    measured_disk = models.BooleanField(
        null=True, blank=True, help_text="Judged as the disk's number: yes, no (a verdict), or not judged (empty)."
    )
    verdict_kinds = models.CharField(max_length=200, blank=True, help_text="The run's verdicts, e.g. client_bound.")

    # The columns `timeseries.day_extremes` and `day_flags` read, in their order.
    DAY_COLUMNS = ("run_id", "finished_ms", *timeseries.SERIES.values(), "limit_iops", "steady", "warning_count")

    class Meta:
        indexes = [
            # A disk's results in time order with what the compliance scans and the scrape's 30 days read of
            # them (run, profile, IOPS and limit): read from the index alone. Ten years of a thousand disks
            # interleave a disk's results one a table page; their reads were half of compliance's time.
            models.Index(
                fields=["disk", "finished_at", "run", "finished_ms", "profile_name", "total_iops", "limit_iops"],
                name="result_disk_time_covering",
            )
        ]

    def __str__(self) -> str:
        return f"result of run {self.run_id}"

    @classmethod
    def record(cls, run: Run, series: str | None = None, *, first: bool = False) -> None:
        """Keep a succeeded run's numbers and recompute its day's extremes; any other run has none.
        Called wherever a finished run's summary is stored. A set's member (a sweep's point) is not one of the
        disk's results: its numbers are drawn on its set's page. Its set records the member that stands for it
        under a series of its own instead (`series`, e.g. "QD sweep · knee": jobs/sets/advancing.py), so that
        the set's result is trended, judged and alerted on as any series of the disk. `first`: in the transaction
        that finished the run (jobs/runs/storing.py), so it has no result row yet: one INSERT, not an UPDATE
        first."""
        if run.state != Run.State.SUCCEEDED or run.finished_at is None or (run.run_set_id and series is None):
            return
        with transaction.atomic(savepoint=False):  # no savepoint inside a caller's: nothing here is caught
            # One writer per disk at a time (PostgreSQL; SQLite writes one at a time anyway), so that two runs
            # stored at once both count in their day. NO KEY: new runs of the disk are not held up.
            list(Disk.objects.select_for_update(no_key=True).filter(pk=run.disk_id).values_list("pk"))
            result = cls.of(run)
            if series is not None:
                result.profile_name = series
            result.save(force_insert=first)
            RunResultDay.refresh(result)

    @classmethod
    def of(cls, run: Run) -> RunResult:
        """The (unsaved) result row of a finished run."""
        assert run.finished_at is not None  # a finished run has its finish time
        numbers = timeseries.run_numbers(run.summary, run.parameters, run.limits_snapshot)
        if numbers["limit_iops"] is None:
            found, _ = run.disk.limits_or_reason(block_size=numbers["block_size_bytes"])
            numbers |= timeseries.snapshot_limits(found.as_dict() if found else None)
        return cls(
            run=run,
            # The run's disk when loaded already: change detection reads it once the result is saved.
            **({"disk": run.disk} if Run.disk.is_cached(run) else {"disk_id": run.disk_id}),
            profile_id=run.profile_id,
            profile_name=run.profile_name,
            finished_at=run.finished_at,
            finished_ms=timeseries.epoch_ms(run.finished_at),
            steady=steady.steady_flag(run.steady_state),
            warning_count=min(len(run.warnings or []), WARNINGS_COUNTED),
            measured_disk=None if run.verdicts is None else not run.verdicts,
            verdict_kinds=",".join(dict.fromkeys(str(v.get("kind")) for v in run.verdicts or []))[:200],
            **numbers,
        )


class RunResultDay(models.Model):
    """One UTC day of a disk's results under one profile (id and name, as runs are grouped): how many, the
    first and the last, and for every chart series its lowest and highest run, in time order as `early` and
    `late` (timeseries.day_extremes). The chart of a long range reads these instead of every result."""

    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="+", db_index=False)
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    profile_name = models.CharField(max_length=100, blank=True)
    day = models.IntegerField(help_text="The UTC day, as a number of days since 1970-01-01.")
    runs = models.PositiveIntegerField()
    first_run = models.BigIntegerField()
    last_run = models.BigIntegerField()
    last_ms = models.BigIntegerField()
    total_early_limit = models.FloatField(null=True, blank=True)
    total_late_limit = models.FloatField(null=True, blank=True)
    # What the day holds for compliance whatever the tolerance (timeseries.day_promise; migration 0016 filled
    # them in for older days): jobs/results/compliance.py reads these instead of every result of a long period.
    first_ms = models.BigIntegerField(null=True, blank=True)
    promised = models.PositiveIntegerField(default=0, help_text="Runs with a limit and a measured total.")
    no_promise = models.PositiveIntegerField(default=0, help_text="Runs measured with no IOPS limit.")
    efficiency_sum = models.FloatField(null=True, blank=True)
    limit_min = models.FloatField(null=True, blank=True)
    limit_max = models.FloatField(null=True, blank=True)
    # The chart's fields of the day (timeseries.DAY_POINTS, below) again, packed into one cell
    # (timeseries.pack_day_points): an all-time chart reads thousands of days, and 92 columns a day cost it more
    # than all else (migration 0024 packed the days stored before it).
    points = models.BinaryField(default=b"", help_text="The day's DAY_POINTS, packed (timeseries.pack_day_points).")
    # ... and for each UTC hour: h<hh>_runs (promised runs) and h<hh>_efficiency (their efficiency sum).
    # ... and for each series in timeseries.SERIES: <series>_early, _early_run, _early_ms, _early_steady,
    # _early_warnings, and the same _late.

    class Meta:
        indexes = [
            # A disk's days with what the chart's and the pointer's reads of them ask (profile, runs, last run):
            # from the index alone, since ten years of days lie one or two a table page (a day row is wide).
            models.Index(
                fields=["disk", "day", "profile", "profile_name", "runs", "last_ms", "last_run"],
                name="result_day_covering",
            )
        ]

    def __str__(self) -> str:
        return f"{self.profile_name} on disk {self.disk_id}, {timeseries.midnight(self.day).date()}"

    @staticmethod
    def summed(rows: list[Any]) -> dict[str, Any]:
        """A day's columns from its rows (RunResult.DAY_COLUMNS, in time order)."""
        extremes = timeseries.day_extremes(rows)
        drawn = extremes | timeseries.day_flags(rows, extremes)
        return drawn | {"points": timeseries.pack_day_points(drawn)} | timeseries.day_promise(rows)

    @classmethod
    def refresh(cls, result: RunResult) -> None:
        """Recompute the day of `result` from the results of that day (the caller holds the disk's lock)."""
        day = timeseries.utc_day(result.finished_ms)
        same = {"disk_id": result.disk_id, "profile_id": result.profile_id, "profile_name": result.profile_name}
        during = {"finished_at__gte": timeseries.midnight(day), "finished_at__lt": timeseries.midnight(day + 1)}
        results = RunResult.objects.filter(**same, **during).order_by("finished_ms", "run_id")
        rows = list(results.values_list(*RunResult.DAY_COLUMNS))
        cls.objects.filter(**same, day=day).delete()
        if rows:
            cls.objects.create(**same, day=day, **cls.summed(rows))
        RunResultLatest.follow(result.disk_id, result.profile_name)

    @classmethod
    def rebuild(cls: type[Self], disk: Disk) -> None:
        """Every day of a disk afresh, after its results were written in bulk (RunResult.of, bulk_create)."""
        results = RunResult.objects.filter(disk=disk).order_by("profile_id", "profile_name", "finished_ms", "run_id")
        rows = results.values_list("profile_id", "profile_name", *RunResult.DAY_COLUMNS)
        days = [
            cls(disk=disk, profile_id=profile_id, profile_name=name, day=day,
                **cls.summed([row[2:] for row in group]))
            for (profile_id, name, day), group in itertools.groupby(
                rows.iterator(chunk_size=5000), key=lambda row: (row[0], row[1], timeseries.utc_day(row[3]))
            )
        ]  # fmt: skip
        newest: dict[str, RunResultDay] = {}
        for day in days:
            kept = newest.get(day.profile_name)
            if kept is None or (day.last_ms, day.last_run) > (kept.last_ms, kept.last_run):
                newest[day.profile_name] = day
        with transaction.atomic():
            cls.objects.filter(disk=disk).delete()
            cls.objects.bulk_create(days, batch_size=500)
            RunResultLatest.objects.filter(disk=disk).delete()
            RunResultLatest.objects.bulk_create(
                RunResultLatest(disk=disk, profile_name=name, last_run=day.last_run, last_ms=day.last_ms)
                for name, day in newest.items()
            )


class RunResultLatest(models.Model):
    """The newest run of each series of a disk (its results under one profile name), as the per-day rollup has
    it: /metrics reports the latest run of every series from these rows instead of ranking every day kept (ten
    years of a thousand disks are millions of days). RunResultDay.refresh and rebuild keep it in step."""

    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="+", db_index=False)
    profile_name = models.CharField(max_length=100, blank=True)
    last_run = models.BigIntegerField()
    last_ms = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["disk", "profile_name"], name="result_latest_series")]

    def __str__(self) -> str:
        return f"latest {self.profile_name} run of disk {self.disk_id}: {self.last_run}"

    @classmethod
    def follow(cls: type[Self], disk_id: int, profile_name: str) -> None:
        """The series' row again from its newest day (after one of its days changed)."""
        newest = (
            RunResultDay.objects.filter(disk_id=disk_id, profile_name=profile_name)
            .order_by("-day", "-last_ms", "-last_run")
            .values("last_run", "last_ms")
            .first()
        )
        if newest is None:
            cls.objects.filter(disk_id=disk_id, profile_name=profile_name).delete()
        else:  # one upsert on the series' unique key: this runs for every result recorded
            cls.objects.bulk_create(
                [cls(disk_id=disk_id, profile_name=profile_name, **newest)],
                update_conflicts=True,
                unique_fields=["disk", "profile_name"],
                update_fields=["last_run", "last_ms"],
            )


def _add_day_extremes(model: type[models.Model]) -> None:
    for name in timeseries.SERIES:
        for end in ("early", "late"):
            model.add_to_class(f"{name}_{end}", models.FloatField(null=True, blank=True))
            model.add_to_class(f"{name}_{end}_run", models.BigIntegerField(null=True, blank=True))
            model.add_to_class(f"{name}_{end}_ms", models.BigIntegerField(null=True, blank=True))
            # The run's RunResult.steady and warning_count, which the chart draws on its point.
            model.add_to_class(f"{name}_{end}_steady", models.BooleanField(null=True, blank=True))
            model.add_to_class(f"{name}_{end}_warnings", models.PositiveSmallIntegerField(null=True, blank=True))


def _add_day_hours(model: type[models.Model]) -> None:
    for hour in range(24):
        model.add_to_class(timeseries.hour_field(hour, "runs"), models.PositiveIntegerField(default=0))
        model.add_to_class(timeseries.hour_field(hour, "efficiency"), models.FloatField(default=0.0))


_add_day_extremes(RunResultDay)
_add_day_hours(RunResultDay)
