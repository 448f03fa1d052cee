"""What changed: level shifts found in a disk's results (ChangePoint) and the events people note (Annotation).

Change points are detected on stored results and kept, so a page or the API reads them in one query however
long the history: `ChangePoint.refresh` runs when a result row is saved (RunResult.record, inside its lock; a
signal, because the results module cannot import this one, which reads it) and looks at the last
WINDOW runs of the series after its baseline. A change point marked expected becomes an annotation and the
series' new baseline: detection looks only at the runs from its first run on."""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from jobs import units
from jobs.analysis import changepoints, verdicts
from jobs.models.disks import Disk
from jobs.models.hosts import Host
from jobs.models.profiles import Profile
from jobs.models.results import RunResult
from jobs.models.runs import Run
from jobs.models.teams import Team

# The runs of a series detection reads at most, newest first: bounded work per recorded run, whatever the
# history (bench/changepoints.py). Older change points stay as they were found.
WINDOW = 1000


class Annotation(models.Model):
    """An event a person noted ("kernel upgrade", "moved to PL2"), for one disk, every disk of a host, or the
    whole team (neither set); it is drawn on the charts of the disks it concerns."""

    class Kind(models.TextChoices):
        EVENT = "event", "Event"
        EXPECTED = "expected", "Expected change"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="annotations", editable=False)
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, null=True, blank=True, related_name="annotations")
    host = models.ForeignKey(Host, on_delete=models.CASCADE, null=True, blank=True, related_name="annotations")
    at = models.DateTimeField(help_text="When it happened.")
    text = models.CharField(max_length=300, help_text="What happened, e.g. kernel upgrade to 6.8.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.EVENT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["team", "at"], name="annotation_team_at")]

    def __str__(self) -> str:
        return f"{self.text} ({self.at:%Y-%m-%d %H:%M})"

    @property
    def scope(self) -> str:
        if self.disk:
            return str(self.disk)
        return f"every disk of {self.host.name}" if self.host else "the whole team"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        disk, host = self.disk, self.host
        if disk and self.team_id and disk.team_id != self.team_id:
            errors["disk"] = "This disk is not in your team; pick one of your team's disks or leave it empty."
        if host and self.team_id and host.team_id != self.team_id:
            errors["host"] = "This host is not in your team; pick one of your team's hosts or leave it empty."
        if disk and host and disk.host_id != host.pk:
            errors["host"] = f"The disk {disk} is not on this host; give the disk alone, or the host alone."
        if not self.text.strip():
            errors["text"] = "Say what happened, e.g. kernel upgrade to 6.8."
        if errors:
            raise ValidationError(errors)

    @classmethod
    def for_disk(cls, disk: Disk) -> models.QuerySet[Annotation]:
        """The annotations a disk's charts show: its own, its host's and the team's."""
        on_disk = models.Q(disk=disk)
        on_host = models.Q(disk__isnull=True, host_id=disk.host_id)
        on_team = models.Q(disk__isnull=True, host__isnull=True)
        return cls.objects.filter(on_disk | on_host | on_team, team_id=disk.team_id)


class ChangePoint(models.Model):
    """A significant level shift in one metric of a disk under one workload (jobs/analysis/changepoints.py).
    `run` is the first run at the new level and `at` its finish time; levels are medians."""

    class Metric(models.TextChoices):
        IOPS = "iops", "Total IOPS"
        BANDWIDTH = "bandwidth", "Bandwidth"
        P99 = "p99_latency", "p99 latency"

    class Direction(models.TextChoices):
        BETTER = "better", "Better"
        WORSE = "worse", "Worse"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", editable=False)
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="change_points")
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    profile_name = models.CharField(max_length=100, blank=True)
    metric = models.CharField(max_length=12, choices=Metric.choices)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField(help_text="The finish time of the first run at the new level.")
    at_ms = models.BigIntegerField()
    before = models.FloatField(help_text="The median of the runs before, in the metric's unit.")
    after = models.FloatField(help_text="The median of the runs from `run` on.")
    change_percent = models.FloatField()
    p_value = models.FloatField(help_text="Mann-Whitney U, two-sided, of the runs before against after.")
    runs_before = models.PositiveIntegerField()
    runs_after = models.PositiveIntegerField()
    direction = models.CharField(max_length=6, choices=Direction.choices)
    steady_only = models.BooleanField(default=False, help_text="Found among steady runs only.")
    detected_at = models.DateTimeField(auto_now=True)
    expected = models.BooleanField(default=False)
    annotation = models.OneToOneField(
        Annotation, on_delete=models.SET_NULL, null=True, blank=True, related_name="change_point"
    )

    class Meta:
        ordering = ["-at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["disk", "profile_name", "metric", "run"], name="one_change_point_per_run")
        ]
        indexes = [
            models.Index(fields=["disk", "at"], name="change_point_disk_at"),
            models.Index(fields=["team", "at"], name="change_point_team_at"),
        ]

    def __str__(self) -> str:
        return f"{self.get_metric_display()} {self.change_percent:+.0f} % on {self.disk_id} at {self.at}"

    @property
    def significance(self) -> str:
        """The p-value as a person reads it: 'p < 0.001' or 'p = 0.004'."""
        return "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3f}"

    @property
    def unit(self) -> str:
        return {"iops": "IOPS", "bandwidth": "B/s", "p99_latency": "µs"}[self.metric]

    @cached_property
    def limit_unit(self) -> str | None:
        """The unit the disk's throughput limit is published in (None without limits): a bandwidth change
        reads in it too."""
        found = self.disk.limits_or_reason()[0]
        return found.total_throughput_unit if found else None

    def levels(self) -> str:
        """'4,000 → 2,800 IOPS'; a bandwidth in benchweb's unit and the limit's, never in raw bytes per second."""
        if self.metric == "bandwidth":
            return f"{self.level_text(self.before)} → {self.level_text(self.after)}"
        return f"{self.before:,.0f} → {self.after:,.0f} {self.unit}"

    def level_text(self, value: float) -> str:
        """A level as the pages show it: 4,000 IOPS, 176 MiB/s = 184.5 MB/s (beside a limit in MB/s), 900 µs."""
        if self.metric == "iops":
            return units.format_iops_exact(value)
        if self.metric == "bandwidth":
            from jobs import limits  # the catalog: imported where it is used, as in jobs/models/disks.py

            return limits.beside(units.format_bytes_per_s(value), value, self.limit_unit)
        return units.format_micros(value)

    @classmethod
    def refresh(cls, disk: Disk, profile_id: int | None, profile_name: str, *, steady_only: bool = False) -> None:
        """Detect afresh in the disk's series under one profile (each metric after its baseline, last WINDOW
        runs), keep change points found again (same id), and drop those no longer found. Runs not in steady
        state count unless steady_only (the default counts every run: a disk that never settles still
        shifts); runs with a verdict that their number was not the disk's count only in a series where every run
        has one (_measured_the_disk; docs/user-guide/verdicts.md)."""
        series = {"disk": disk, "profile_id": profile_id, "profile_name": profile_name}
        baselines = dict(
            cls.objects.filter(**series, expected=True)
            .values("metric")
            .annotate(last=models.Max("at_ms"))
            .values_list("metric", "last")
        )
        results = RunResult.objects.filter(
            **series, finished_ms__gte=min(baselines.get(m, 0) for m in changepoints.METRICS)
        )
        if steady_only:
            results = results.filter(steady=True)
        columns = ("run_id", "finished_ms", "total_iops", "bw_bytes_per_s", "read_p99_us", "write_p99_us")
        found = list(
            results.order_by("-finished_ms", "-run_id").values_list(*columns, "finished_at", "verdict_kinds")[:WINDOW]
        )
        rows = [row[:-1] for row in _measured_the_disk(found)]
        finished = {row[0]: row[-1] for row in rows}
        # A window cut short of the history sees little before its first runs: change points in its older half
        # stay as an earlier, longer look found them; those in its newer half are judged again.
        judged_from = rows[len(rows) // 2][1] if len(rows) == WINDOW else 0
        # The change points judged again, of every metric in one query (one a metric before: every run pays it).
        kept: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
        judged = cls.objects.filter(**series, expected=False, at_ms__gte=judged_from)
        for pk, metric, run_id in judged.values_list("pk", "metric", "run_id"):
            kept[metric].append((pk, run_id))
        for metric in changepoints.METRICS:
            since = baselines.get(metric, 0)
            points = [point for row in reversed(rows) if row[1] >= since and (point := _point(metric, row[:-1]))]
            cls._store(disk, series, metric, points, finished, judged_from, kept[metric], steady_only=steady_only)

    @classmethod
    def _store(
        cls, disk: Disk, series: dict[str, Any], metric: str, points: list[changepoints.Point],
        finished: dict[int, Any], judged_from: int, kept: list[tuple[int, int]], *, steady_only: bool,
    ) -> None:  # fmt: skip
        """`kept`: the metric's change points (id, run) judged again, as refresh read them."""
        found = {
            change.first.run_id: change
            for change in changepoints.detect(points)
            if change.first.finished_ms >= judged_from
        }
        if stale := [pk for pk, run_id in kept if run_id not in found]:
            cls.objects.filter(pk__in=stale).delete()
        for run_id, change in found.items():
            cls.objects.update_or_create(
                disk=disk, profile_name=series["profile_name"], metric=metric, run_id=run_id,
                defaults={
                    "team_id": disk.team_id, "profile_id": series["profile_id"],
                    "at": finished[run_id], "at_ms": change.first.finished_ms,
                    "before": change.before, "after": change.after, "change_percent": change.change_percent,
                    "p_value": change.p_value, "runs_before": change.runs_before, "runs_after": change.runs_after,
                    "direction": change.direction(metric), "steady_only": steady_only,
                },
            )  # fmt: skip

    @classmethod
    def refresh_disk(cls, disk: Disk) -> None:
        """Every series of a disk, after its results were written in bulk (as RunResultDay.rebuild)."""
        series = RunResult.objects.filter(disk=disk).values_list("profile_id", "profile_name").distinct()
        for profile_id, profile_name in series.order_by():
            cls.refresh(disk, profile_id, profile_name)

    def mark_expected(self, user: Any, text: str = "") -> Annotation:
        """Make this change the series' new baseline and note it as an annotation on the disk: detection
        then looks only from its first run on, so the change points before it go."""
        with transaction.atomic():
            # The lock RunResult.record holds while it refreshes: a run recorded meanwhile waits for the baseline.
            list(Disk.objects.select_for_update(no_key=True).filter(pk=self.disk_id).values_list("pk"))
            annotation = Annotation.objects.create(
                team_id=self.team_id, disk_id=self.disk_id, at=self.at, kind=Annotation.Kind.EXPECTED,
                created_by=user if getattr(user, "is_authenticated", False) else None,
                text=(text.strip() or self.describe())[:300],
            )  # fmt: skip
            self.expected, self.annotation = True, annotation
            self.save(update_fields=["expected", "annotation"])
            same = {"disk_id": self.disk_id, "profile_name": self.profile_name, "metric": self.metric}
            ChangePoint.objects.filter(**same, at_ms__lt=self.at_ms).exclude(expected=True).delete()
            ChangePoint.refresh(self.disk, self.profile_id, self.profile_name, steady_only=self.steady_only)
        return annotation

    def describe(self) -> str:
        """e.g. 'Expected: total IOPS -30 % (4,000 -> 2,800 IOPS) under randread-4k'."""
        return f"Expected: {self.headline()}"

    def headline(self) -> str:
        """e.g. 'total IOPS -30 % (4,000 -> 2,800 IOPS) under randread-4k'."""
        return (
            f"{changepoints.METRICS[self.metric]} {self.change_percent:+.0f} % "
            f"({self.levels()}) under {self.profile_name or 'no profile'}"
        )


def _point(metric: str, row: tuple[Any, ...]) -> changepoints.Point | None:
    """The metric's value of a result row (RunResult columns in refresh's order), or None if not measured. p99
    latency is the read side's when the workload reads, else the write side's."""
    run_id, finished_ms, iops, bw, read_p99, write_p99 = row
    value = {"iops": iops, "bandwidth": bw, "p99_latency": read_p99 if read_p99 is not None else write_p99}[metric]
    return None if value is None else changepoints.Point(run_id, finished_ms, float(value))


@receiver(post_save, sender=RunResult, dispatch_uid="change_points_of_a_recorded_result")
def _result_saved(sender: type[RunResult], instance: RunResult, **kwargs: Any) -> None:
    """Results written in bulk send no signal: their writer calls ChangePoint.refresh_disk."""
    ChangePoint.refresh(instance.disk, instance.profile_id, instance.profile_name)


# Markers a chart draws at most of each kind, newest first: a chart cannot show more apart anyway.
CHART_MARKS = 100


def chart_marks(disk: Disk, start: Any, end: Any) -> dict[str, list[dict[str, Any]]]:
    """The change points and annotations a disk's charts mark between start and end (None: unbounded), x in ms
    since the epoch as the chart's points."""
    within = {key: moment for key, moment in (("at__gte", start), ("at__lte", end)) if moment is not None}
    changes = ChangePoint.objects.filter(disk=disk, **within)[:CHART_MARKS]
    notes = Annotation.for_disk(disk).filter(**within)[:CHART_MARKS]
    return {
        "changes": [
            {
                "id": c.pk, "x": c.at_ms, "run": c.run_id, "metric": c.metric, "profile": c.profile_name,
                "before": c.before, "after": c.after, "change_percent": c.change_percent, "p_value": c.p_value,
                "direction": c.direction, "expected": c.expected,
            }
            for c in changes
        ],
        "annotations": [
            {"id": a.pk, "x": round(a.at.timestamp() * 1000), "text": a.text, "kind": a.kind} for a in notes
        ],
    }  # fmt: skip


def _measured_the_disk(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows (their verdict kinds last) without the runs whose number was not the disk's (client-bound, a
    cache, a host under pressure: verdicts.NOT_THE_DISKS) when the series has runs that measured the disk: a week
    served from a cache is no level of the disk. A series whose every run carries such a verdict (a buffered
    workload, say) keeps them all: its levels are still that workload's, and its changes still worth finding."""
    kept = [row for row in rows if not any(kind in (row[-1] or "") for kind in verdicts.NOT_THE_DISKS)]
    return kept if kept else rows
