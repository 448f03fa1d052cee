"""Runs and their per-second samples: the row is the truth of a run's state (docs/architecture.md)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from typing import Any, Self

from django.conf import settings
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from jobs.models import partitions
from jobs.models.disks import Disk
from jobs.models.profiles import Profile
from jobs.models.schedules import Schedule
from jobs.models.sets import RunSet
from jobs.models.teams import Team

# A look at a running run's live figures (Run.want_progress) has them read often for this long.
PROGRESS_WANTED_FOR = timedelta(seconds=60)


class Run(models.Model):
    # Columns a list or a chart never shows (the tool's whole output, the command sent): left unread there.
    BULKY_FIELDS = ("raw_output", "raw_stderr", "command")

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        QUEUED = "queued", "Queued"
        LAUNCHING = "launching", "Launching"
        RUNNING = "running", "Running"
        COLLECTING = "collecting", "Collecting"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        ERROR = "error", "Error"
        CANCELLED = "cancelled", "Cancelled"
        LOST = "lost", "Lost"
        SKIPPED = "skipped", "Skipped"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        SCHEDULE = "schedule", "Schedule"
        API = "api", "API"
        IMPORT = "import", "Import"

    # States in which a run holds its disk; at most one per disk (docs/decisions/0002-database-is-the-truth.md).
    ACTIVE_STATES = ("queued", "launching", "running", "collecting")
    FINAL_STATES = ("succeeded", "failed", "error", "cancelled", "lost", "skipped")

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs", editable=False)
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="runs")
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs")
    profile_name = models.CharField(max_length=100, blank=True)
    parameters = models.JSONField(default=dict, blank=True, help_text="The profile's parameters when the run was made.")
    schedule = models.ForeignKey(Schedule, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs")
    fire_time = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    explanation = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    not_before = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict, blank=True, help_text="Live: elapsed_s, eta_s, read_iops, write_iops.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last time a worker looked at this run.")
    progress_wanted_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Someone looks at this running run's live figures (its page, the overview, the API) until then: "
        "its observer reads them every few seconds instead of every UNWATCHED_PROGRESS_EVERY_S.",
    )
    backlog_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The sweep found this run stale while its site's queue held messages no worker had taken, and has "
        "not sent it again since then: it waits its turn, for at most sweeping.BACKLOG_PATIENCE.",
    )
    cancel_requested = models.BooleanField(default=False)
    command = models.TextField(blank=True, help_text="The exact job file or argv sent to the target.")
    remote_dir = models.CharField(max_length=1024, blank=True)
    launch_attempt = models.PositiveIntegerField(
        default=0,
        help_text="Counts the attempts at launching this run; only the latest may send the launch or end the run.",
    )
    remote_pid = models.PositiveIntegerField(null=True, blank=True)
    exit_status = models.IntegerField(null=True, blank=True)
    raw_output = models.TextField(blank=True)
    raw_stderr = models.TextField(blank=True)
    import_fingerprint = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_index=True,
        editable=False,
        help_text="Imports only: the sha256 of the output as imported (and its group), to refuse the same one twice.",
    )
    pruned_at = models.DateTimeField(
        null=True, blank=True, help_text="When retention dropped the raw output and samples (the summary stays)."
    )
    summary = models.JSONField(null=True, blank=True, help_text="The canonical result summary (docs/architecture.md).")
    limits_snapshot = models.JSONField(
        null=True, blank=True, help_text="The disk's limits when the run was made (scheduled runs: when it launched)."
    )
    destructive = models.BooleanField(default=False)
    # Steady state: {"state": "steady" | "not_steady" | "not_checked", "by": "fio" | "benchweb", ...details}.
    steady_state = models.JSONField(null=True, blank=True, editable=False)
    # Whether the number is the disk's: the verdicts judged from the host's telemetry and fio's own view when the
    # run was collected (jobs/analysis/verdicts.py): a list, empty when the run measured the disk; null when not
    # judged (a run before telemetry, an import, a failed run).
    verdicts = models.JSONField(null=True, blank=True, editable=False)
    # What the read-only environment probe found before the launch (kernel, fio, CPUs, device queue, mount).
    environment = models.JSONField(null=True, blank=True, editable=False)
    # A member of a set of runs (a sweep's point, a search's step): its place in the set and what it varies.
    run_set = models.ForeignKey(RunSet, on_delete=models.CASCADE, null=True, blank=True, related_name="members")
    set_index = models.PositiveIntegerField(null=True, blank=True, help_text="The member's place in its set, from 0.")
    set_point = models.JSONField(
        null=True, blank=True, help_text="The fields this member sets on its set's base parameters, e.g. iodepth."
    )
    # A group member's host clock against the worker's, measured over the host's session at launch
    # (jobs/remote/clock.py, group_clocks.clock_offset): {"offset_s", "uncertainty_s", "delay_s", "probes"}, or
    # {"why"} when it could not be; None for any other run.
    clock_offset = models.JSONField(null=True, blank=True, editable=False)
    # Things a person should know that did not stop the run, e.g. a directory disk now on another filesystem.
    warnings = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["disk"],
                condition=Q(state__in=["queued", "launching", "running", "collecting"]),
                name="one_active_run_per_disk",
            ),
            models.UniqueConstraint(
                fields=["schedule", "fire_time", "disk", "profile"],
                # A sweep's points share their fire: the set is the one made per fire (RunSet's constraint).
                condition=Q(schedule__isnull=False, run_set__isnull=True),
                name="one_run_per_schedule_fire_disk_profile",
            ),
        ]
        indexes = [
            models.Index(fields=["disk", "finished_at"], name="run_disk_finished"),
            models.Index(fields=["team", "created_at"], name="run_team_created"),
            models.Index(fields=["state", "not_before"], name="run_state_not_before"),
            # The API's runs list filtered by disk, newest first (bench/api_runs_list.py), and the overview's
            # running / waiting / failed lists of a team.
            models.Index(fields=["team", "disk", "-created_at"], name="run_team_disk_created"),
            models.Index(fields=["team", "state"], name="run_team_state"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} on {self.disk} ({self.state})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.team_id = self.disk.team_id
        if self.profile and not self.profile_name:
            self.profile_name = self.profile.name
        super().save(*args, **kwargs)

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    def reread(self, written: Mapping[str, Any] | None = None) -> None:
        """refresh_from_db, keeping the run's disk (and its host) when loaded and still the run's: a step reads them
        once, not again after each state move (refresh_from_db forgets every related object). Whatever else is
        related (its set, its schedule) is read afresh when next used, as it may have moved meanwhile. `written`:
        the fields the UPDATE before this one set; the bulky ones among them (a 120 s fio run's output is ~900 KB of
        status documents) are kept as written rather than read back."""
        disk = self.disk if Run.disk.is_cached(self) else None
        kept = {
            name: value
            for name, value in (written or {}).items()
            if name in Run.BULKY_FIELDS and isinstance(value, str)
        }
        if kept:
            self.refresh_from_db(fields=[f.attname for f in self._meta.concrete_fields if f.attname not in kept])
            for name, value in kept.items():
                setattr(self, name, value)
        else:
            self.refresh_from_db()
        if disk is not None and self.disk_id == disk.pk:
            Run.disk.field.set_cached_value(self, disk)

    @staticmethod
    def clock(started: Any, expected_s: float, now: Any) -> dict[str, float]:
        """elapsed_s and eta_s, as a poll stores them in `progress`, for a run started at `started`."""
        elapsed = max(0.0, (now - started).total_seconds())
        # Cut to the tenth, as a stopwatch shows it, never rounded up: a run's elapsed time must not pass the span
        # from its start to its end (10.38 s shown as 10.4 did, when the collector saw the end within 20 ms).
        shown = math.floor(round(elapsed * 10, 6)) / 10
        return {"elapsed_s": shown, "eta_s": max(0.0, round(expected_s - elapsed, 1))}

    @classmethod
    def want_progress(cls, runs: Iterable[Run], now: datetime | None = None) -> None:
        """Someone is looking at these runs' live figures (a page, the overview, the API): the running ones among
        them are read often for the next PROGRESS_WANTED_FOR (jobs/runs/watching.py). A run marked within the last
        half of that is not written again, so a page polling every 2 s writes once a PROGRESS_WANTED_FOR / 2."""
        now = now or timezone.now()
        renew = now + PROGRESS_WANTED_FOR / 2
        due = [run.pk for run in runs if run.state == cls.State.RUNNING
               and (run.progress_wanted_until is None or run.progress_wanted_until < renew)]  # fmt: skip
        if due:
            wanted = now + PROGRESS_WANTED_FOR
            cls.objects.filter(pk__in=due, state=cls.State.RUNNING).update(progress_wanted_until=wanted)

    @classmethod
    def want_progress_of(cls, run_ids: Iterable[int], now: datetime | None = None) -> None:
        """want_progress for runs known by their ids (a list of rows): one read of the running ones among them."""
        ids = list(run_ids)
        if ids:
            running = cls.objects.filter(pk__in=ids, state=cls.State.RUNNING).only(
                "pk", "state", "progress_wanted_until"
            )
            cls.want_progress(running, now)

    def progress_wanted(self, now: datetime) -> bool:
        return self.progress_wanted_until is not None and self.progress_wanted_until > now

    def live_progress(self) -> dict[str, Any]:
        """The progress of the last poll, with elapsed time and ETA as of now. Near its end a run's poll waits
        on the host for the finish, so without this the bar would stand still for those seconds."""
        progress = dict(self.progress or {})
        expected = progress.get("expected_s")
        if self.state == self.State.RUNNING and self.started_at and expected:
            progress |= self.clock(self.started_at, expected, timezone.now())
        return progress


class MonthOfRun(models.DateField):
    """The first day of the sample's run's creation month (UTC): the month partition the row lives in on
    PostgreSQL (jobs/models/partitions.py). Filled as the row is written, by save() and bulk_create alike, so a
    sample made with its run alone lands where retention looks for it."""

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        if getattr(model_instance, self.attname) is None:
            setattr(model_instance, self.attname, RunSample.month_of(model_instance.run))  # type: ignore[attr-defined]
        return super().pre_save(model_instance, add)


# RunSample.store's statements (its table is jobs_runsample, as the migrations and partitions.KEYS name it).
_SAMPLES_FROM_ARRAYS = (
    "INSERT INTO jobs_runsample (run_id, month, t_s, read_iops, write_iops) "
    "SELECT * FROM unnest(%s::bigint[], %s::date[], %s::float8[], %s::float8[], %s::float8[])"
)
_SAMPLE_ROW = "INSERT INTO jobs_runsample (run_id, month, t_s, read_iops, write_iops) VALUES (%s, %s, %s, %s, %s)"


class RunSample(models.Model):
    """One per-second point of a run's time series."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    month = MonthOfRun(editable=False, help_text="The run's creation month: the sample's partition on PostgreSQL.")
    t_s = models.FloatField(help_text="Seconds since the run started.")
    read_iops = models.FloatField(null=True, blank=True)
    write_iops = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "t_s"]
        indexes = [models.Index(fields=["run", "t_s"], name="sample_run_t")]

    def __str__(self) -> str:
        return f"run {self.run_id} at {self.t_s:g} s"

    @staticmethod
    def month_of(run: Run) -> date:
        """The month a run's samples are kept in: its creation month (UTC)."""
        return partitions.month_of(run.created_at or timezone.now())

    @classmethod
    def of_run(cls: type[Self], run: Run) -> models.QuerySet[Self]:
        """The run's samples, from its month's partition alone on PostgreSQL (the month narrows nothing else)."""
        return cls.objects.filter(run_id=run.pk, month=cls.month_of(run))

    @classmethod
    def store(cls: type[Self], run: Run, samples: list[dict[str, Any]], *, first: bool = False) -> None:
        """The run's samples as the parser gave them ({t_s, read_iops, write_iops}), replacing any stored. `first`:
        stored in the transaction that finishes the run (jobs/runs/storing.py), so none can be stored yet."""
        month = cls.month_of(run)
        partitions.ensure_ahead("jobs_runsample", month)
        if not first:
            cls.of_run(run).delete()
        if not samples:
            return
        # Not through model instances: a 120 s run's 120 of them cost bulk_create 4 ms of the collection's CPU, the
        # statement below a fraction of it (bench/collection_cost.py). PostgreSQL takes the columns as arrays.
        columns: list[Any] = [
            [run.pk] * len(samples), [connection.ops.adapt_datefield_value(month)] * len(samples),
            [s["t_s"] for s in samples],
            [s.get("read_iops") for s in samples], [s.get("write_iops") for s in samples],
        ]  # fmt: skip
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(_SAMPLES_FROM_ARRAYS, columns)
            else:
                cursor.executemany(_SAMPLE_ROW, list(zip(*columns, strict=True)))


class RunTally(models.Model):
    """A team's runs in each final state up to a run id, so that /metrics counts only the runs since
    (jobs/metrics/tally.py): counting ten years of runs by state took seconds. Nothing leaves a final state, so
    the counts below `upto` stand until a run below it is deleted: deleting a disk (with its runs and sets) or
    runs in the admin takes them off here, and the team's disks and sets as they were counted (how many, and the
    sum of their ids: ids are never used again) tell when runs went another way; the counts are then made again."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, primary_key=True, related_name="+")
    upto = models.BigIntegerField(help_text="Every run of the team with an id up to this one was final when counted.")
    counts = models.JSONField(default=dict, help_text="Final state: the team's runs in it with an id up to `upto`.")
    disks = models.IntegerField(default=0)
    disk_ids = models.BigIntegerField(default=0)
    sets = models.IntegerField(default=0)
    set_ids = models.BigIntegerField(default=0)
    counted_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"runs of team {self.team_id} up to {self.upto}"
