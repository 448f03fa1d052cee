"""Schedules: which profiles on which disks, when (cron, interval, window), with their stagger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from jobs.models.disks import Disk
from jobs.models.profiles import Profile
from jobs.models.teams import Team

if TYPE_CHECKING:
    from jobs import scheduling


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
    as_group = models.BooleanField(
        default=False,
        help_text="Fire each profile as one synchronised group on all the targets, started at one instant, "
        "instead of one run a target (no stagger).",
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
        from jobs import scheduling  # with croniter: imported where it is used (jobs/models/disks.py says why)

        now = timezone.now()
        upcoming = scheduling.next_fires(self.rule(), now, 1) if self.enabled else []
        self.checked_until = now
        self.next_fire_at = upcoming[0] if upcoming else None
        super().save(*args, **kwargs)

    def rule(self) -> scheduling.Rule:
        from jobs import scheduling

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
        from jobs import scheduling

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
