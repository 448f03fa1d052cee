"""The benchweb domain: teams own hosts, credentials, disks, profiles, schedules and runs."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from jobs import crypto, limits, paths, safety, scheduling, timeseries


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="one_membership_per_user_and_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class InvitationQuerySet(models.QuerySet):
    def pending(self) -> InvitationQuerySet:
        return self.filter(
            accepted_at__isnull=True, declined_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
        )


class Invitation(models.Model):
    """An owner's offer of a role in a team; the membership exists only once the invited person accepts.

    `invited_as` is what the owner typed and all the owner ever sees: whether an account answers to it is not
    shown, so the form cannot be used to find out which usernames exist. `user` is the account it was bound to
    (at invitation, or at sign-up with the invited email), and only that account may accept or decline it.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    invited_as = models.CharField(max_length=254, help_text="The username or email the owner typed.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="invitations"
    )
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    token = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "expires_at"], name="invitation_user_expires")]

    def __str__(self) -> str:
        return f"{self.invited_as} to {self.team} ({self.role})"

    @property
    def is_pending(self) -> bool:
        answered = self.accepted_at or self.declined_at or self.revoked_at
        return not answered and self.expires_at > timezone.now()


class Credential(models.Model):
    """An SSH secret. Only ciphertext is stored; nothing renders the plaintext back."""

    class Kind(models.TextChoices):
        PASSWORD = "password", "Password"
        PRIVATE_KEY = "private_key", "Private key"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="credentials")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    secret_token = models.TextField(editable=False)
    passphrase_token = models.TextField(blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="credential_name_unique_in_team")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def set_secret(self, secret: str, passphrase: str = "") -> None:
        if not secret:
            raise ValidationError({"secret": "Enter the password or paste the private key."})
        self.secret_token = crypto.encrypt(secret)
        self.passphrase_token = crypto.encrypt(passphrase) if passphrase else ""

    def reveal_secret(self) -> str:
        return crypto.decrypt(self.secret_token)

    def reveal_passphrase(self) -> str:
        return crypto.decrypt(self.passphrase_token) if self.passphrase_token else ""


site_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]*$", "Use lowercase letters, digits, '-' and '_' (it names a worker queue), e.g. eu-west."
)


class Host(models.Model):
    class OS(models.TextChoices):
        LINUX = "linux", "Linux"
        AIX = "aix", "AIX"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="hosts")
    name = models.CharField(max_length=100)
    address = models.CharField(max_length=255, help_text="DNS name or IP address the workers connect to.")
    port = models.PositiveIntegerField(default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    username = models.CharField(max_length=64)
    credential = models.ForeignKey(Credential, on_delete=models.PROTECT, null=True, blank=True, related_name="hosts")
    site = models.CharField(max_length=50, blank=True, validators=[site_validator])
    os = models.CharField(max_length=8, choices=OS.choices, default=OS.LINUX)
    host_key_type = models.CharField(max_length=40, blank=True)
    host_key_b64 = models.TextField(blank=True)
    host_key_fingerprint = models.CharField(
        max_length=100, blank=True, help_text="SHA256 fingerprint, set on approval."
    )
    host_key_approved_at = models.DateTimeField(null=True, blank=True)
    host_key_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A scanned key waits here until a person compares its fingerprint and approves it.
    scanned_key_type = models.CharField(max_length=40, blank=True, editable=False)
    scanned_key_b64 = models.TextField(blank=True, editable=False)
    scanned_key_fingerprint = models.CharField(max_length=100, blank=True, editable=False)
    scanned_at = models.DateTimeField(null=True, blank=True, editable=False)
    run_base_dir = models.CharField(
        max_length=1024, blank=True, help_text="Where run directories go on the host. Empty: ~/.benchweb/runs."
    )
    exclusive = models.BooleanField(
        default=False, help_text="At most one run on this host at a time (its disks share a backend)."
    )
    ndisk64_path = models.CharField(
        max_length=1024, blank=True, help_text="Path of ndisk64 on the host when it is not on the PATH."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="host_name_unique_in_team")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.credential_id and self.credential.team_id != self.team_id:
            errors["credential"] = "Choose a credential of this host's team."
        if self.run_base_dir:
            try:
                paths.check(self.run_base_dir, field="run directory", home=True)
            except paths.PathError as exc:
                errors["run_base_dir"] = str(exc)
        if self.ndisk64_path:
            try:
                paths.check(self.ndisk64_path, field="ndisk64 path", command=True)
            except paths.PathError as exc:
                errors["ndisk64_path"] = str(exc)
        if errors:
            raise ValidationError(errors)

    @property
    def has_pinned_key(self) -> bool:
        return bool(self.host_key_b64 and self.host_key_fingerprint)


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
        default=False, help_text="Allow write profiles on this target. Writes to a block device destroy its data."
    )
    # What the host said the target is (WWN, serial, by-id path, loop backing file; the filesystem UUID of a
    # directory), so a different disk attached at the same path is refused before a write run touches it.
    identity = models.JSONField(default=dict, blank=True, editable=False)
    identity_recorded_at = models.DateTimeField(null=True, blank=True, editable=False)
    identity_note = models.CharField(max_length=500, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host__name", "label"]
        constraints = [models.UniqueConstraint(fields=["host", "label"], name="disk_label_unique_on_host")]

    def __str__(self) -> str:
        return f"{self.host.name}:{self.label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.team_id = self.host.team_id
        super().save(*args, **kwargs)

    def spec(self) -> limits.Spec:
        return limits.Spec(**{spec_field: getattr(self, field) for spec_field, field in SPEC_FIELDS.items()})

    def limits(self, block_size: int | None = None) -> limits.Limits:
        return limits.evaluate(self.spec(), block_size=block_size)

    def identity_description(self) -> str:
        return safety.describe_identity(self.identity)

    def clean(self) -> None:
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
}


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
    block_size_bytes = models.PositiveIntegerField(default=4096, validators=[MinValueValidator(512)])
    runtime_s = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1), MaxValueValidator(7 * 86400)])
    direct = models.BooleanField(default=True)
    read_percent = models.PositiveSmallIntegerField(default=50, validators=[MaxValueValidator(100)])
    jobs = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(256)], help_text="fio numjobs / ndisk64 -M."
    )
    size_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Test file size per job (fio size, ndisk64 -s). Empty on a device: all of it."
    )
    # fio only.
    rw = models.CharField(max_length=10, choices=RW.choices, default=RW.RANDREAD)
    iodepth = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(4096)])
    time_based = models.BooleanField(default=True)
    ramp_time_s = models.PositiveIntegerField(default=0)
    ioengine = models.CharField(max_length=20, default="libaio")
    extra_options = models.JSONField(default=dict, blank=True, help_text="Further allow-listed fio options.")
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
        return self.rw not in {self.RW.READ, self.RW.RANDREAD}

    @property
    def expected_seconds(self) -> int:
        return self.runtime_s + (self.ramp_time_s if self.tool == self.Tool.FIO else 0)

    def clean(self) -> None:
        from jobs.tools import options

        errors = options.check_extra_options(self.extra_options) if self.tool == self.Tool.FIO else {}
        if self.tool == self.Tool.NDISK64 and self.extra_options:
            errors["extra_options"] = "ndisk64 takes no extra options; leave this empty."
        if self.tool == self.Tool.FIO and self.ioengine not in options.IOENGINES:
            errors["ioengine"] = f"Choose one of {', '.join(sorted(options.IOENGINES))}."
        if errors:
            raise ValidationError(errors)

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
        return common | {
            "rw": self.rw,
            "iodepth": self.iodepth,
            "time_based": self.time_based,
            "ramp_time_s": self.ramp_time_s,
            "ioengine": self.ioengine,
            "extra_options": self.extra_options,
        }


class Schedule(models.Model):
    class Kind(models.TextChoices):
        CRON = "cron", "Cron expression"
        INTERVAL = "interval", "Every N minutes"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="schedules")
    name = models.CharField(max_length=100)
    profiles = models.ManyToManyField(Profile, through="ScheduleProfile", related_name="schedules")
    targets = models.ManyToManyField(Disk, related_name="schedules")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CRON)
    cron = models.CharField(max_length=100, blank=True, help_text="Five fields, e.g. '30 2 * * *' for 02:30 daily.")
    timezone = models.CharField(max_length=64, default="UTC", help_text="IANA name, e.g. Europe/Berlin.")
    interval_minutes = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    starts_at = models.DateTimeField(
        null=True, blank=True, help_text="Interval schedules fire at this time and every N minutes after it."
    )
    stagger_s = models.PositiveIntegerField(default=0, help_text="Seconds between consecutive targets.")
    auto_stagger = models.BooleanField(
        default=False, help_text="Spread the targets so that no two runs on one host (or site) overlap."
    )
    auto_stagger_by_site = models.BooleanField(
        default=False, help_text="With auto-stagger: one run per site at a time."
    )
    blackouts = models.JSONField(default=list, blank=True, help_text='Daily ranges, e.g. ["08:00-18:00"].')
    misfire_grace_s = models.PositiveIntegerField(
        default=300, help_text="A fire missed by longer than this (beat or workers down) is recorded as skipped."
    )
    enabled = models.BooleanField(default=True)
    # The dispatcher's bookkeeping: fires up to checked_until are materialised; next_fire_at is indexed so
    # that one tick is one query, however many schedules there are.
    checked_until = models.DateTimeField(null=True, blank=True, editable=False)
    next_fire_at = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)
    last_fire_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="schedule_name_unique_in_team")]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Saving (an edit, a pause, a resume) starts the dispatcher's bookkeeping afresh: fires from now on
        # only, nothing back-filled, and runs already made are left as they are.
        now = timezone.now()
        upcoming = scheduling.next_fires(self.rule(), now, 1) if self.enabled else []
        self.checked_until = now
        self.next_fire_at = upcoming[0] if upcoming else None
        super().save(*args, **kwargs)

    def rule(self) -> scheduling.Rule:
        return scheduling.Rule(
            kind=self.kind,
            cron=self.cron,
            timezone=self.timezone,
            interval_minutes=self.interval_minutes,
            anchor=self.starts_at or self.window_start,
            window_start=self.window_start,
            window_end=self.window_end,
            blackouts=tuple(self.blackouts or ()),
        )

    def clean(self) -> None:
        if self.kind == self.Kind.CRON and not self.cron:
            raise ValidationError({"cron": "Enter a cron expression, e.g. '30 2 * * *' (02:30 every day)."})
        if self.kind == self.Kind.INTERVAL and not self.interval_minutes:
            raise ValidationError({"interval_minutes": "Enter how many minutes apart, e.g. 60."})
        if not isinstance(self.blackouts, list) or not all(isinstance(b, str) for b in self.blackouts):
            raise ValidationError({"blackouts": 'Give a list of daily ranges, e.g. ["08:00-18:00", "22:00-23:30"].'})
        errors = scheduling.validate(self.rule())
        if errors:
            raise ValidationError(errors)


class ScheduleProfile(models.Model):
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE)
    profile = models.ForeignKey(Profile, on_delete=models.PROTECT)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "profile"], name="profile_once_per_schedule"),
        ]

    def __str__(self) -> str:
        return f"{self.schedule} #{self.position}: {self.profile}"


class Run(models.Model):
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
    cancel_requested = models.BooleanField(default=False)
    command = models.TextField(blank=True, help_text="The exact job file or argv sent to the target.")
    remote_dir = models.CharField(max_length=1024, blank=True)
    remote_pid = models.PositiveIntegerField(null=True, blank=True)
    exit_status = models.IntegerField(null=True, blank=True)
    raw_output = models.TextField(blank=True)
    raw_stderr = models.TextField(blank=True)
    pruned_at = models.DateTimeField(
        null=True, blank=True, help_text="When retention dropped the raw output and samples (the summary stays)."
    )
    summary = models.JSONField(null=True, blank=True, help_text="The canonical result summary (DESIGN.md).")
    limits_snapshot = models.JSONField(
        null=True, blank=True, help_text="The disk's limits when the run was made (scheduled runs: when it launched)."
    )
    destructive = models.BooleanField(default=False)
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
                condition=Q(schedule__isnull=False),
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

    @staticmethod
    def clock(started: Any, expected_s: float, now: Any) -> dict[str, float]:
        """elapsed_s and eta_s, as a poll stores them in `progress`, for a run started at `started`."""
        elapsed = max(0.0, (now - started).total_seconds())
        return {"elapsed_s": round(elapsed, 1), "eta_s": max(0.0, round(expected_s - elapsed, 1))}

    def live_progress(self) -> dict[str, Any]:
        """The progress of the last poll, with elapsed time and ETA as of now. Near its end a run's poll waits
        on the host for the finish, so without this the bar would stand still for those seconds."""
        progress = dict(self.progress or {})
        expected = progress.get("expected_s")
        if self.state == self.State.RUNNING and self.started_at and expected:
            progress |= self.clock(self.started_at, expected, timezone.now())
        return progress


class RunSample(models.Model):
    """One per-second point of a run's time series."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    t_s = models.FloatField(help_text="Seconds since the run started.")
    read_iops = models.FloatField(null=True, blank=True)
    write_iops = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "t_s"]
        indexes = [models.Index(fields=["run", "t_s"], name="sample_run_t")]

    def __str__(self) -> str:
        return f"run {self.run_id} at {self.t_s:g} s"


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

    # The columns `timeseries.day_extremes` reads, in its order.
    DAY_COLUMNS = ("run_id", "finished_ms", *timeseries.SERIES.values(), "limit_iops")

    class Meta:
        indexes = [models.Index(fields=["disk", "finished_at"], name="result_disk_finished")]

    def __str__(self) -> str:
        return f"result of run {self.run_id}"

    @classmethod
    def record(cls, run: Run) -> None:
        """Keep a succeeded run's numbers and recompute its day's extremes; any other run has none.
        Called wherever a finished run's summary is stored."""
        if run.state != Run.State.SUCCEEDED or run.finished_at is None:
            return
        with transaction.atomic():
            # One writer per disk at a time (PostgreSQL; SQLite writes one at a time anyway), so that two runs
            # stored at once both count in their day. NO KEY: new runs of the disk are not held up.
            list(Disk.objects.select_for_update(no_key=True).filter(pk=run.disk_id).values_list("pk"))
            result = cls.of(run)
            result.save()
            RunResultDay.refresh(result)

    @classmethod
    def of(cls, run: Run) -> RunResult:
        """The (unsaved) result row of a finished run."""
        numbers = timeseries.run_numbers(run.summary, run.parameters, run.limits_snapshot)
        if numbers["limit_iops"] is None:
            try:
                found = run.disk.limits(block_size=numbers["block_size_bytes"]).as_dict()
            except limits.SpecError:
                found = None
            numbers |= timeseries.snapshot_limits(found)
        return cls(
            run=run,
            disk_id=run.disk_id,
            profile_id=run.profile_id,
            profile_name=run.profile_name,
            finished_at=run.finished_at,
            finished_ms=timeseries.epoch_ms(run.finished_at),
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
    # ... and for each series in timeseries.SERIES: <series>_early, _early_run, _early_ms, and the same _late.

    class Meta:
        indexes = [models.Index(fields=["disk", "day"], name="result_day_disk_day")]

    def __str__(self) -> str:
        return f"{self.profile_name} on disk {self.disk_id}, {timeseries.midnight(self.day).date()}"

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
            cls.objects.create(**same, day=day, **timeseries.day_extremes(rows))

    @classmethod
    def rebuild(cls, disk: Disk) -> None:
        """Every day of a disk afresh, after its results were written in bulk (RunResult.of, bulk_create)."""
        results = RunResult.objects.filter(disk=disk).order_by("profile_id", "profile_name", "finished_ms", "run_id")
        rows = results.values_list("profile_id", "profile_name", *RunResult.DAY_COLUMNS)
        days = [
            cls(disk=disk, profile_id=profile_id, profile_name=name, day=day,
                **timeseries.day_extremes([row[2:] for row in group]))
            for (profile_id, name, day), group in itertools.groupby(
                rows.iterator(chunk_size=5000), key=lambda row: (row[0], row[1], timeseries.utc_day(row[3]))
            )
        ]  # fmt: skip
        with transaction.atomic():
            cls.objects.filter(disk=disk).delete()
            cls.objects.bulk_create(days, batch_size=500)


def _add_day_extremes(model: type[models.Model]) -> None:
    for name in timeseries.SERIES:
        for end in ("early", "late"):
            model.add_to_class(f"{name}_{end}", models.FloatField(null=True, blank=True))
            model.add_to_class(f"{name}_{end}_run", models.BigIntegerField(null=True, blank=True))
            model.add_to_class(f"{name}_{end}_ms", models.BigIntegerField(null=True, blank=True))


_add_day_extremes(RunResultDay)
