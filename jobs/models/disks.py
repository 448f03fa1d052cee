"""Disks: a target on a host, its spec (from which the limits follow) and its recorded identity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from jobs import paths
from jobs.models.hosts import Host
from jobs.models.teams import Team

# The limits catalog, the runners and the safety rules are imported by the methods that use them: every process
# loads the models as it starts, and most (a migrate, beat, any manage.py command) never calls them.
if TYPE_CHECKING:
    from jobs import runners
    from jobs.limits import Limits, Spec


class Disk(models.Model):
    class Kind(models.TextChoices):
        DIRECTORY = "directory", "Directory (test files in it)"
        BLOCK = "block", "Block device"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="disks", editable=False)
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="disks")
    label = models.CharField(max_length=100)
    target_path = models.CharField(
        max_length=1024,
        validators=[RegexValidator(r"^/", "Give an absolute path, e.g. /data/bench or /dev/nvme1n1.")],
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.DIRECTORY)
    disk_type = models.CharField(max_length=40, default="custom", help_text="Catalog type, e.g. aws-gp3.")
    size = models.PositiveIntegerField(null=True, blank=True, help_text="Size in the type's unit (GiB or GB).")
    stripes = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(128)], help_text="Volumes striped together."
    )
    # Provisioned values for provisioned types (gp3, io2, SolidFire QoS, ...); the limits themselves for custom.
    spec_iops = models.PositiveIntegerField(null=True, blank=True)
    spec_bytes_per_s = models.PositiveBigIntegerField(null=True, blank=True)
    spec_burst_iops = models.PositiveIntegerField(null=True, blank=True)
    spec_burst_bytes_per_s = models.PositiveBigIntegerField(null=True, blank=True)
    instance_iops_cap = models.PositiveIntegerField(null=True, blank=True)
    instance_bytes_per_s_cap = models.PositiveBigIntegerField(null=True, blank=True)
    allow_destructive = models.BooleanField(
        default=False,
        help_text="Block devices only: write and mixed profiles overwrite the device, so they run only with this "
        "ticked. A directory needs no switch (writes go to benchweb's own test files).",
    )
    # The unit the spec's own throughput figures (custom, provisioned, instance cap) were typed in, so pages show
    # them as typed. Empty for disks saved before it was kept: read from the figures (limits.typed_unit).
    throughput_unit = models.CharField(
        max_length=8,
        blank=True,
        default="",
        choices=[("MB/s", "MB/s"), ("MiB/s", "MiB/s")],
        help_text="The unit the throughput figures of the spec were typed in; empty: read from the figures.",
    )
    # What the host said the target is (WWN, serial, by-id path, loop backing file; the filesystem UUID of a
    # directory), so a different disk attached at the same path is refused before a write run touches it.
    identity = models.JSONField(default=dict, blank=True, editable=False)
    identity_recorded_at = models.DateTimeField(null=True, blank=True, editable=False)
    identity_note = models.CharField(max_length=500, blank=True, editable=False)
    # When and how the target was last filled, so that runs on never-written blocks are told apart: {"at": ISO
    # time, "how": words, "source": "run" | "user", "run": run id}. Empty: nothing known.
    precondition = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host__name", "label"]
        constraints = [models.UniqueConstraint(fields=["host", "label"], name="disk_label_unique_on_host")]

    def __str__(self) -> str:
        return f"{self.host.name}:{self.label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.team_id = self.host.team_id
        super().save(*args, **kwargs)

    def spec(self) -> Spec:
        from jobs import limits

        return limits.Spec(**{spec_field: getattr(self, field) for spec_field, field in SPEC_FIELDS.items()})

    def limits(self, block_size: int | None = None) -> Limits:
        """Raises limits.SpecError naming the field when the spec gives no limits (limits_or_reason does not)."""
        from jobs import limits

        return limits.evaluate(self.spec(), block_size=block_size)

    def destructive_for(self, profile: Any) -> bool:
        """The destructive rule: a profile that writes destroys what a block device holds (a directory target
        gets files of its own). Such runs need allow_destructive and pass the safety probe before any write."""
        return bool(profile.writes) and self.kind == self.Kind.BLOCK

    def refusal_for(self, profile: Any) -> runners.Unrunnable | None:
        """Why `profile` cannot run on this disk, or None: the one rule by which a new run is refused
        (queueing.create_run) and the Run now form disables a choice, so the two never disagree."""
        from jobs import runners

        if getattr(profile, "is_sweep", False):
            return self._sweep_refusal(profile)
        if self.destructive_for(profile) and not self.allow_destructive:
            fill = bool(getattr(profile, "precondition", ""))
            return runners.Unrunnable(
                "profile",
                "destructive: disk not marked for destructive writes",
                f"{'its fill writes all of the device' if fill else 'it writes'}, and writes to the block device "
                f"{self.target_path} destroy its data: tick “Allow destructive writes” on the disk only if that is "
                f"what you want, or choose a read profile{' without a fill' if fill else ''}.",
            )
        return runners.build_problem(profile.parameters(), self.target_path, self.kind)

    def _sweep_refusal(self, profile: Any) -> runners.Unrunnable | None:
        """A sweep runs whole or not at all: the first of its points this disk refuses, named, refuses it."""
        from jobs import runners
        from jobs.tools import sweep_plan

        try:
            plan = profile.sweep()
        except sweep_plan.SweepError as exc:
            return runners.Unrunnable("profile", "sweep axes to fix", f"its sweep cannot be planned: {exc}")
        for number, point in enumerate(plan.points, 1):
            if refusal := self.refusal_for(profile.at_point(point)):
                where = sweep_plan.point_text(point, profile.tool)
                return runners.Unrunnable(
                    refusal.field,
                    f"point {number}: {refusal.short}",
                    f"point {number} of {plan.count} ({where}) is refused, so the whole sweep is, and nothing was "
                    f"started: {refusal.message}",
                )
        return None

    def limits_or_reason(self, block_size: int | None = None) -> tuple[Limits | None, str | None]:
        """The theoretical limits, or None and why there are none (a custom spec without figures, a size outside
        the type's range): every page, the API and the charts show one or the other."""
        from jobs import limits

        try:
            return self.limits(block_size=block_size), None
        except limits.SpecError as exc:
            return None, str(exc)

    def limits_snapshot(self, block_size: int | None = None) -> dict[str, Any]:
        """The limits at this block size as stored on a run (its theoretical figures for good), or the reason."""
        found, reason = self.limits_or_reason(block_size)
        return found.as_dict() if found else {"error": reason}

    def identity_description(self) -> str:
        from jobs import safety

        return safety.describe_identity(self.identity)

    def clean(self) -> None:
        from jobs import limits

        errors: dict[str, str] = {}
        try:
            limits.evaluate(self.spec())
        except limits.SpecError as exc:
            errors[SPEC_FIELDS.get(exc.field, "disk_type")] = str(exc)
        try:
            # An empty or relative path is the field's own error (blank=False and its validator): said once.
            if self.target_path.startswith("/"):
                paths.check(self.target_path, field="target path")
        except paths.PathError as exc:
            errors["target_path"] = str(exc)
        if errors:
            raise ValidationError(errors)


# limits.Spec field -> Disk field, so a spec error lands on the form field the user typed.
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
    "typed_unit": "throughput_unit",
}
