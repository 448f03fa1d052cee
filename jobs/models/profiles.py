"""Profiles: what a run does (tool, pattern, block size, depth, runtime), presets and the team's own."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from jobs import units
from jobs.analysis import sla_search
from jobs.models.teams import Team
from jobs.tools import options, sweep_plan

# The percentiles a summary carries (jobs/tools/summary.py PERCENTILES), as a search names them.
SLA_PERCENTILES = [("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("p99.9", "p99.9")]
MAX_SLA_RUNS = 20
# The one field a latency-target search's points set: the total IOPS a step is capped at.
RATE_POINT = sweep_plan.RATE_FIELD


class AxesField(models.JSONField):
    """A sweep's axes, field -> values in the order they nest, stored as a list of [field, values] pairs: PostgreSQL's
    jsonb re-sorts an object's keys (shorter first), which would swap which axis is outer once the profile is read
    back. Python sees the ordered dict either way; an object stored before is still read."""

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            value = [[str(field), values] for field, values in value.items()]
        return super().get_prep_value(value)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        found = super().from_db_value(value, expression, connection)
        if isinstance(found, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in found):
            return {str(field): values for field, values in found}
        return found


class Profile(models.Model):
    """A benchmark recipe. Built-in presets have no team and are shared read-only by every team."""

    class Tool(models.TextChoices):
        FIO = "fio", "fio"
        NDISK64 = "ndisk64", "ndisk64 (IBM nstress)"

    class RW(models.TextChoices):
        READ = "read", "sequential read"
        WRITE = "write", "sequential write"
        RANDREAD = "randread", "random read"
        RANDWRITE = "randwrite", "random write"
        RW = "rw", "sequential mixed"
        RANDRW = "randrw", "random mixed"

    class Pattern(models.TextChoices):
        RANDOM = "random", "random (-R)"
        SEQUENTIAL = "sequential", "sequential (-S)"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="profiles", null=True, blank=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, editable=False)
    tool = models.CharField(max_length=8, choices=Tool.choices, default=Tool.FIO)
    # Shared by both tools.
    block_size_bytes = models.PositiveIntegerField(default=4096, validators=[MinValueValidator(options.MIN_BLOCK_SIZE)])
    runtime_s = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1), MaxValueValidator(7 * 86400)])
    direct = models.BooleanField(default=True)
    read_percent = models.PositiveSmallIntegerField(default=50, validators=[MaxValueValidator(100)])
    jobs = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(options.MAX_JOBS)],
        help_text="fio numjobs / ndisk64 -M.",
    )
    size_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Test file size per job (fio size, ndisk64 -s). Empty on a device: all of it."
    )
    # fio only.
    rw = models.CharField(max_length=10, choices=RW.choices, default=RW.RANDREAD)
    iodepth = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(options.MAX_IODEPTH)]
    )
    time_based = models.BooleanField(default=True)
    ramp_time_s = models.PositiveIntegerField(default=0)
    ioengine = models.CharField(max_length=20, default="libaio")
    extra_options = models.JSONField(default=dict, blank=True, help_text="Further allow-listed fio options.")
    # Steady-state detection (fio's ss, ss_dur, ss_ramp); an empty metric leaves it to benchweb's own check of
    # the per-second samples (jobs/analysis/steady.py).
    ss_metric = models.CharField(
        max_length=12,
        blank=True,
        default="",
        choices=[
            ("iops", "IOPS within a band (iops)"),
            ("iops_slope", "IOPS slope (iops_slope)"),
            ("bw", "bandwidth within a band (bw)"),
            ("bw_slope", "bandwidth slope (bw_slope)"),
        ],
        help_text="fio ss: stop once this criterion holds over the window; empty: fio does not look.",
    )
    ss_limit = models.CharField(max_length=16, blank=True, default="", help_text="fio ss limit, e.g. 20% or 0.3%.")
    ss_dur_s = models.PositiveIntegerField(null=True, blank=True, help_text="fio ss_dur: the window, in seconds.")
    ss_ramp_s = models.PositiveIntegerField(null=True, blank=True, help_text="fio ss_ramp: seconds before it looks.")
    # Preconditioning: a fill of the target before the measured job, under the same safety rules as any write.
    precondition = models.CharField(
        max_length=12,
        blank=True,
        default="",
        choices=[("fill", "sequential write of the whole target (or test file) first")],
    )
    precondition_passes = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(4)], help_text="How many times to fill."
    )
    # The ESSD PL3 recipe: fio jobs pinned to the CPUs of the device's blk-mq queues (cpus_allowed, split).
    pin_queue_cpus = models.BooleanField(
        default=False, help_text="Pin fio jobs to the CPUs serving the device's blk-mq queues (block devices)."
    )
    # A sweep: the axes it varies on the fields above, field -> text in the order they nest (the first outer), in
    # the syntax of jobs/tools/sweep_plan.py, e.g. {"iodepth": "1-256 x2"}. Empty: one run.
    sweep_axes = AxesField(default=dict, blank=True, help_text="Sweep axes: field -> values, e.g. 1-256 x2.")
    sweep_on_failure = models.CharField(
        max_length=8,
        choices=[("continue", "go on with the next point"), ("stop", "stop the sweep")],
        default="continue",
        help_text="What a sweep does when a point fails.",
    )
    # A latency-target (SLA) search: the most IOPS whose percentile stays at most the target, found by a bounded
    # search over fio's rate_iops (jobs/analysis/sla_search.py), one run a step. Empty target: no search.
    SLA_PERCENTILE_DEFAULT = "p99"
    SLA_MAX_RUNS_DEFAULT = 8
    sla_percentile = models.CharField(
        max_length=6,
        choices=SLA_PERCENTILES,
        default=SLA_PERCENTILE_DEFAULT,
        help_text="The completion-latency percentile held to the target (the worse direction of a mixed job).",
    )
    sla_target_us = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="The latency target in µs; empty: the profile is not a latency-target search.",
    )
    sla_max_runs = models.PositiveSmallIntegerField(
        default=SLA_MAX_RUNS_DEFAULT,
        validators=[MinValueValidator(sla_search.MIN_RUNS), MaxValueValidator(MAX_SLA_RUNS)],
        help_text="The most runs a search makes, the first (unthrottled) one included.",
    )
    sla_lowest_iops = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="The lowest rate tried; empty: a twentieth of the first, unthrottled run's IOPS.",
    )
    # ndisk64 only.
    pattern = models.CharField(max_length=10, choices=Pattern.choices, default=Pattern.RANDOM)

    class Meta:
        ordering = ["-builtin", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="profile_name_unique_in_team"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(team__isnull=True), name="builtin_profile_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def writes(self) -> bool:
        if self.tool == self.Tool.NDISK64:
            return self.read_percent < 100
        # A fill before a read profile writes the whole target: it is a write for every safety rule.
        return self.rw not in {self.RW.READ, self.RW.RANDREAD} or bool(self.precondition)

    @property
    def expected_seconds(self) -> int:
        from jobs import runners  # fio's and ndisk's knowledge: imported where it is used (jobs/models/disks.py)

        return runners.expected_seconds(self.parameters())

    def clean(self) -> None:
        errors = options.check_extra_options(self.extra_options) if self.tool == self.Tool.FIO else {}
        if self.tool == self.Tool.NDISK64 and self.extra_options:
            errors["extra_options"] = "ndisk64 takes no extra options; leave this empty."
        if self.tool == self.Tool.FIO and self.ioengine not in options.IOENGINES:
            errors["ioengine"] = f"Choose one of {', '.join(sorted(options.IOENGINES))}."
        errors |= self._steady_state_errors()
        errors |= self._size_errors()
        if self.tool == self.Tool.NDISK64 and self.precondition:
            errors["precondition"] = "Only fio profiles can fill the target first; leave this empty for ndisk64."
        if self.sweep_axes and not errors:
            errors |= self._sweep_errors()
        if self.is_sla:
            errors |= self._sla_errors()
        if errors:
            raise ValidationError(errors)

    def _size_errors(self) -> dict[str, str]:
        """Sizes the tool cannot run: a block larger than the file per job (fio: "size too small, must not be less
        than minimum block size"), or than each of its nrfiles files (fio then does no I/O at all), and a direct
        block size that is not whole sectors (EINVAL on the first read). Refused at save, not by a failed run."""
        errors: dict[str, str] = {}
        block, size = self.block_size_bytes, self.size_bytes
        files = self._nrfiles()
        if block and size and block > size:
            errors["block_size_bytes"] = (
                f"The block size ({units.format_bytes(block)}) is larger than the file size per job "
                f"({units.format_bytes(size)}): {self.tool} cannot run a job whose file is smaller than one block. "
                f"Make the block size at most {units.format_bytes(size)}, or the file size per job at least "
                f"{units.format_bytes(block)}."
            )
        elif block and size and files > 1 and block > size // files:
            errors["block_size_bytes"] = (
                f"The block size ({units.format_bytes(block)}) is larger than each of the {files} files "
                f"(nrfiles) the file size per job is split into ({units.format_bytes(size // files)}): fio would do no "
                f"I/O at all. Make the block size at most {units.format_bytes(size // files)}, the file size per job "
                f"at least {units.format_bytes(block * files)}, or nrfiles smaller."
            )
        elif self.tool == self.Tool.FIO and self.direct and block and block % options.SECTOR:
            errors["block_size_bytes"] = (
                f"With direct I/O the block size must be a whole number of 512-byte sectors; {block:,} bytes is not, "
                "and fio's first read would fail (Invalid argument). Use e.g. 4k or 64k, or turn direct I/O off."
            )
        return errors

    @property
    def is_sweep(self) -> bool:
        return bool(self.sweep_axes)

    def sweep(self) -> sweep_plan.Plan:
        """The sweep's plan (its points and time); SweepError names the axis to fix."""
        if not isinstance(self.sweep_axes, dict):
            raise sweep_plan.SweepError(
                None, 'Give the axes as an object of field -> values, e.g. {"iodepth": "1-64 x2"}.'
            )
        return sweep_plan.make_plan(self.parameters(), {str(k): str(v) for k, v in self.sweep_axes.items()})

    def at_point(self, point: dict[str, Any]) -> Profile:
        """This profile with a set point's fields set: an unsaved copy, for its parameters and its checks. A
        latency-target search's point is {"rate_iops": total IOPS}, fio's rate cap shared out among the jobs
        (options.rate_iops_value); no point ({}) is its unthrottled run."""
        copy = Profile(**{field.attname: getattr(self, field.attname) for field in self._meta.concrete_fields})
        copy.pk = None
        copy.sweep_axes = {}
        copy.sla_target_us = None
        for field, value in point.items():
            if field == RATE_POINT:
                mixed = self.read_percent if self.rw in {self.RW.RW, self.RW.RANDRW} else None
                rate = options.rate_iops_value(value, self.jobs, mixed)
                copy.extra_options = {**(self.extra_options or {}), "rate_iops": rate}
            else:
                setattr(copy, field, value)
        return copy

    def _sweep_errors(self) -> dict[str, str]:
        """A sweep the tool could not run at one of its points is refused at save, naming the point."""
        try:
            plan = self.sweep()
        except sweep_plan.SweepError as exc:
            return {"sweep_axes": str(exc)}
        for number, point in enumerate(plan.points, 1):
            if problems := self.at_point(point)._size_errors():
                where = sweep_plan.point_text(point, self.tool)
                return {"sweep_axes": f"Point {number} ({where}): {next(iter(problems.values()))}"}
        return {}

    @property
    def is_sla(self) -> bool:
        return self.sla_target_us is not None

    @property
    def is_set(self) -> bool:
        """Started as a set of runs (jobs/sets/requesting.py request_set), not as one run."""
        return self.is_sweep or self.is_sla

    def _sla_errors(self) -> dict[str, str]:
        """A search needs fio's rate cap, and no rate of the profile's own; a profile is one kind of thing."""
        if self.sweep_axes:
            return {"sla_target_us": "A profile is a sweep, a latency-target search or a single run, never two: "
                    "empty the sweep axes or the latency target."}  # fmt: skip
        if self.tool != self.Tool.FIO:
            return {"sla_target_us": f"A latency-target search steps fio's rate_iops; {self.tool} has no rate cap. "
                    "Empty the target, or make it a fio profile."}  # fmt: skip
        extras = self.extra_options if isinstance(self.extra_options, dict) else {}
        if taken := sorted(set(extras) & options.RATE_OPTIONS):
            return {"extra_options": f"A latency-target search sets the rate itself, run by run; remove "
                    f"{', '.join(taken)} from the extra options."}  # fmt: skip
        return {}

    def _nrfiles(self) -> int:
        value = str((self.extra_options or {}).get("nrfiles", "")) if self.tool == self.Tool.FIO else ""
        return int(value) if value.isdigit() and len(value) < 10 else 1

    def _steady_state_errors(self) -> dict[str, str]:
        if self.tool == self.Tool.NDISK64:
            if self.ss_metric or self.ss_limit or self.ss_dur_s is not None or self.ss_ramp_s is not None:
                return {"ss_metric": "ndisk64 has no steady-state detection (fio's ss); leave the ss fields empty: "
                        "benchweb judges the run's per-second samples itself where it has them."}  # fmt: skip
            return {}
        return options.ss_problems(self.ss_metric, self.ss_limit, self.ss_dur_s, self.ss_ramp_s, self.runtime_s)

    def steady_state_parameters(self) -> dict[str, Any]:
        """fio's ss settings as a run snapshots them; none when the profile does not ask fio to look, so the
        parameters of runs made before these fields existed read the same."""
        if not self.ss_metric:
            return {}
        return {"ss_metric": self.ss_metric, "ss_limit": self.ss_limit, "ss_dur_s": self.ss_dur_s,
                "ss_ramp_s": self.ss_ramp_s}  # fmt: skip

    def parameters(self) -> dict[str, Any]:
        """The typed parameters, as snapshotted on every run."""
        common = {
            "tool": self.tool,
            "block_size_bytes": self.block_size_bytes,
            "runtime_s": self.runtime_s,
            "direct": self.direct,
            "read_percent": self.read_percent,
            "jobs": self.jobs,
            "size_bytes": self.size_bytes,
        }
        if self.tool == self.Tool.NDISK64:
            return common | {"pattern": self.pattern}
        fio = {
            "rw": self.rw,
            "iodepth": self.iodepth,
            "time_based": self.time_based,
            "ramp_time_s": self.ramp_time_s,
            "ioengine": self.ioengine,
            "extra_options": self.extra_options,
            "pin_queue_cpus": self.pin_queue_cpus,
        }
        fill = (
            {"precondition": self.precondition, "precondition_passes": self.precondition_passes}
            if self.precondition
            else {}
        )
        return common | fio | fill | self.steady_state_parameters()
