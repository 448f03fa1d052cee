"""Result rows and day extremes for the disk chart, filled in for the runs already stored; per-second samples
leave the summaries, since RunSample holds them.

The data steps read summaries with jobs.timeseries (pure functions) as they are at this migration: a later
change there that adds a series needs a migration of its own.
"""

import itertools

import django.db.models.deletion
from django.db import migrations, models

from jobs import timeseries

BATCH = 1000
# Disk field -> limits.Spec field, as at this migration.
SPEC_FIELDS = {
    "disk_type": "disk_type",
    "size": "size",
    "stripes": "stripes",
    "iops": "spec_iops",
    "bytes_per_s": "spec_bytes_per_s",
    "burst_iops": "spec_burst_iops",
    "burst_bytes_per_s": "spec_burst_bytes_per_s",
    "instance_iops_cap": "instance_iops_cap",
    "instance_bytes_per_s_cap": "instance_bytes_per_s_cap",
}


def _batches(ids):
    return (ids[start : start + BATCH] for start in range(0, len(ids), BATCH))


def _disk_limits(disk, block_size):
    from jobs import limits  # the catalog: only a migration that fills rows needs it, not every migrate's plan

    spec = limits.Spec(**{spec_field: getattr(disk, field) for spec_field, field in SPEC_FIELDS.items()})
    try:
        return limits.evaluate(spec, block_size=block_size).as_dict()
    except limits.SpecError:
        return None


def fill_results(apps, schema_editor):
    Disk = apps.get_model("jobs", "Disk")
    Run = apps.get_model("jobs", "Run")
    RunResult = apps.get_model("jobs", "RunResult")
    RunResultDay = apps.get_model("jobs", "RunResultDay")
    fields = {field.name for field in RunResult._meta.get_fields()}
    disks = {}
    fallback = {}
    succeeded = Run.objects.filter(state="succeeded", finished_at__isnull=False).order_by("pk")
    for ids in _batches(list(succeeded.values_list("pk", flat=True))):
        runs = Run.objects.filter(pk__in=ids).only(
            "pk", "disk_id", "profile_id", "profile_name", "finished_at", "summary", "parameters", "limits_snapshot"
        )
        results = []
        for run in runs:
            numbers = timeseries.run_numbers(run.summary, run.parameters, run.limits_snapshot)
            if numbers["limit_iops"] is None:
                # No limit snapshotted: the disk's limits at the run's block size, as RunResult.record does.
                key = (run.disk_id, numbers["block_size_bytes"])
                if key not in fallback:
                    disk = disks.get(run.disk_id) or disks.setdefault(run.disk_id, Disk.objects.get(pk=run.disk_id))
                    fallback[key] = _disk_limits(disk, key[1])
                numbers |= timeseries.snapshot_limits(fallback[key])
            results.append(
                RunResult(
                    run_id=run.pk,
                    disk_id=run.disk_id,
                    profile_id=run.profile_id,
                    profile_name=run.profile_name,
                    finished_at=run.finished_at,
                    finished_ms=timeseries.epoch_ms(run.finished_at),
                    **{name: value for name, value in numbers.items() if name in fields},
                )
            )
        RunResult.objects.bulk_create(results)

    columns = ("run_id", "finished_ms", *timeseries.SERIES.values(), "limit_iops")
    rows = RunResult.objects.order_by("disk_id", "profile_id", "profile_name", "finished_ms", "run_id")
    rows = rows.values_list("disk_id", "profile_id", "profile_name", *columns).iterator(chunk_size=5000)
    days = []
    for (disk_id, profile_id, name, day), group in itertools.groupby(
        rows, key=lambda row: (row[0], row[1], row[2], timeseries.utc_day(row[4]))
    ):
        extremes = timeseries.day_extremes([row[3:] for row in group])
        days.append(RunResultDay(disk_id=disk_id, profile_id=profile_id, profile_name=name, day=day, **extremes))
        if len(days) == BATCH:
            RunResultDay.objects.bulk_create(days)
            days.clear()
    RunResultDay.objects.bulk_create(days)


def move_samples_out_of_summaries(apps, schema_editor):
    Run = apps.get_model("jobs", "Run")
    RunSample = apps.get_model("jobs", "RunSample")
    for ids in _batches(list(Run.objects.filter(summary__has_key="samples").values_list("pk", flat=True))):
        runs = list(Run.objects.filter(pk__in=ids).only("pk", "summary"))
        stored = set(RunSample.objects.filter(run_id__in=ids).values_list("run_id", flat=True).distinct())
        # Every writer stored the samples in both places; a run with none in RunSample keeps its own here.
        RunSample.objects.bulk_create(
            RunSample(run_id=run.pk, t_s=s["t_s"], read_iops=s.get("read_iops"), write_iops=s.get("write_iops"))
            for run in runs
            if run.pk not in stored
            for s in run.summary["samples"] or ()
            if isinstance(s, dict) and isinstance(s.get("t_s"), int | float)
        )
        for run in runs:
            del run.summary["samples"]
        Run.objects.bulk_update(runs, ["summary"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0004_run_snapshot_at_launch"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunResult",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="result",
                        serialize=False,
                        to="jobs.run",
                    ),
                ),
                ("profile_name", models.CharField(blank=True, max_length=100)),
                ("finished_at", models.DateTimeField()),
                (
                    "finished_ms",
                    models.BigIntegerField(help_text="finished_at in whole ms since the Unix epoch: the chart's x."),
                ),
                ("block_size_bytes", models.PositiveIntegerField(blank=True, null=True)),
                ("total_iops", models.FloatField(blank=True, null=True)),
                ("read_iops", models.FloatField(blank=True, null=True)),
                ("write_iops", models.FloatField(blank=True, null=True)),
                ("bw_bytes_per_s", models.PositiveBigIntegerField(blank=True, null=True)),
                ("read_p50_us", models.FloatField(blank=True, null=True)),
                ("read_p99_us", models.FloatField(blank=True, null=True)),
                ("read_p99_9_us", models.FloatField(blank=True, null=True)),
                ("write_p50_us", models.FloatField(blank=True, null=True)),
                ("write_p99_us", models.FloatField(blank=True, null=True)),
                ("write_p99_9_us", models.FloatField(blank=True, null=True)),
                (
                    "limit_iops",
                    models.FloatField(blank=True, help_text="The run's baseline IOPS at its block size.", null=True),
                ),
                ("burst_iops", models.FloatField(blank=True, null=True)),
                (
                    "disk",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="jobs.disk"
                    ),
                ),
                (
                    "profile",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="jobs.profile",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["disk", "finished_at"], name="result_disk_finished")],
            },
        ),
        migrations.CreateModel(
            name="RunResultDay",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("profile_name", models.CharField(blank=True, max_length=100)),
                ("day", models.IntegerField(help_text="The UTC day, as a number of days since 1970-01-01.")),
                ("runs", models.PositiveIntegerField()),
                ("first_run", models.BigIntegerField()),
                ("last_run", models.BigIntegerField()),
                ("last_ms", models.BigIntegerField()),
                ("total_early_limit", models.FloatField(blank=True, null=True)),
                ("total_late_limit", models.FloatField(blank=True, null=True)),
                *(
                    (f"{series}_{end}{suffix}", field_class(blank=True, null=True))
                    for series in (
                        "total",
                        "read",
                        "write",
                        "read_p50",
                        "read_p99",
                        "read_p99_9",
                        "write_p50",
                        "write_p99",
                        "write_p99_9",
                    )
                    for end in ("early", "late")
                    for suffix, field_class in (
                        ("", models.FloatField),
                        ("_run", models.BigIntegerField),
                        ("_ms", models.BigIntegerField),
                    )
                ),  # fmt: skip
                (
                    "disk",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="jobs.disk"
                    ),
                ),
                (
                    "profile",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="jobs.profile",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["disk", "day"], name="result_day_disk_day")],
            },
        ),
        migrations.RunPython(fill_results, migrations.RunPython.noop, elidable=True),
        # Reversed, the samples stay in RunSample, which is where every reader takes them from.
        migrations.RunPython(move_samples_out_of_summaries, migrations.RunPython.noop, elidable=True),
    ]
