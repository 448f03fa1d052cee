"""Alerts: a condition worth a person's attention (a regression, runs below the promise, a failed run, a
skipped fire, a stale disk, a changed host key, a group below its promise or with its members far apart), its
lifecycle, and the team's rules for each kind.

One alert per condition: `condition` is a key such as "run_failed:disk=3:profile=randread-4k", unique among
the team's alerts that are not resolved, so a disk failing every hour keeps one alert open (the runs behind it
gather) instead of a storm. When the condition returns after it cleared, the resolved alert is opened again
and `reopened_count` says how often. The lifecycle that moves them is jobs/alerts/lifecycle.py."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from jobs.models.changes import ChangePoint
from jobs.models.disks import Disk
from jobs.models.hosts import Host
from jobs.models.profiles import Profile
from jobs.models.runs import Run
from jobs.models.schedules import Schedule
from jobs.models.sets import RunSet
from jobs.models.teams import Team


class Kind(models.TextChoices):
    REGRESSION = "regression", "Regression"
    BELOW_PROMISE = "below_promise", "Below the promise"
    RUN_FAILED = "run_failed", "Run failed"
    SCHEDULE_SKIPPED = "schedule_skipped", "Scheduled fire skipped"
    STALE = "stale", "No recent successful run"
    HOST_KEY_CHANGED = "host_key_changed", "Host key changed"
    GROUP_BELOW_PROMISE = "group_below_promise", "Group total below the promise"
    GROUP_SPREAD = "group_spread", "Group members far apart"
    RUN_VERDICT = "run_verdict", "Not the disk's number"


# What each kind watches, as the rules page and the API describe it.
KIND_HELP = {
    Kind.REGRESSION: "A change point toward worse in a disk's IOPS, bandwidth or p99 latency under one workload.",
    Kind.BELOW_PROMISE: "The last N runs of a workload on a disk all measured below the disk's promised IOPS "
    "(less the 5 % tolerance of the compliance report).",
    Kind.RUN_FAILED: "A run that ended failed, in error, or lost; resolved when the next run of that workload on "
    "that disk succeeds.",
    Kind.SCHEDULE_SKIPPED: "A schedule's fire that was skipped (missed while beat or the workers were down, or "
    "outside its window); resolved when a later fire starts.",
    Kind.STALE: "A disk with an enabled schedule and no successful run for N of its intervals (plus 15 minutes).",
    Kind.HOST_KEY_CHANGED: "A host presented another SSH key than the approved one; resolved when it presents the "
    "approved key again (a login, a test, a key scan, the minute's sweep) or a person approves a key.",
    Kind.GROUP_BELOW_PROMISE: "A synchronised group whose total while every member ran was under X % of the group's "
    "limit (its members' limits summed, or its cap); judged when a group ends, resolved by the next group of that "
    "profile on those disks that reaches it.",
    Kind.GROUP_SPREAD: "A synchronised group whose members' IOPS were more than N % apart ((highest - lowest) / "
    "highest); judged when a group ends, resolved by the next group of that profile on those disks within it.",
    Kind.RUN_VERDICT: "The last judged run of a workload on a disk has a verdict against its number (client-bound, "
    "cache suspected, device saturated, stripe imbalance, host under pressure; throttled at the promise is expected "
    "and does not alert); resolved when the next judged run has none.",
}


class AlertRule(models.Model):
    """A team's setting for one kind of alert. A team with no row for a kind gets the defaults (`defaults`):
    every kind on, 3 runs below the promise, 2 intervals before a disk is stale, a group's total under 95 % of its
    limit, its members more than 20 % apart."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_rules", editable=False)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    enabled = models.BooleanField(default=True)
    consecutive_runs = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Below the promise: how many runs in a row, 1 to 100.",
    )
    intervals = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Stale: how many of the schedule's intervals without a successful run, 1 to 100.",
    )
    promise_percent = models.PositiveSmallIntegerField(
        default=95,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Group total below the promise: the % of the group's limit its total must reach, 1 to 100.",
    )
    spread_percent = models.PositiveSmallIntegerField(
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Group members far apart: the spread of the members' IOPS above which it alerts, 1 to 100 %.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind"]
        constraints = [models.UniqueConstraint(fields=["team", "kind"], name="one_alert_rule_per_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} in {self.team_id}: {'on' if self.enabled else 'off'}"

    @property
    def help(self) -> str:
        return KIND_HELP[Kind(self.kind)]

    @classmethod
    def for_team(cls, team_id: int) -> dict[str, AlertRule]:
        """Every kind's rule, stored or the default (unsaved), in the order of Kind."""
        stored = {rule.kind: rule for rule in cls.objects.filter(team_id=team_id)}
        return {kind: stored.get(kind) or cls(team_id=team_id, kind=kind) for kind in Kind.values}

    @classmethod
    def of(cls, team_id: int, kind: str) -> AlertRule:
        return cls.objects.filter(team_id=team_id, kind=kind).first() or cls(team_id=team_id, kind=kind)


class Alert(models.Model):
    class State(models.TextChoices):
        OPEN = "open", "Open"
        ACKNOWLEDGED = "acknowledged", "Acknowledged"
        RESOLVED = "resolved", "Resolved"

    Kind = Kind
    UNRESOLVED = (State.OPEN, State.ACKNOWLEDGED)

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alerts", editable=False)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    condition = models.CharField(max_length=200, help_text="What holds, as a key: one unresolved alert per key.")
    state = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True)
    opened_at = models.DateTimeField(help_text="When it was opened, or last opened again.")
    last_seen_at = models.DateTimeField(help_text="When the condition was last seen to hold.")
    reopened_count = models.PositiveIntegerField(default=0)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=300, blank=True, help_text="Why it was resolved.")
    # What is behind it: whichever of these the kind has.
    host = models.ForeignKey(Host, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    disk = models.ForeignKey(Disk, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    profile_name = models.CharField(max_length=100, blank=True)
    schedule = models.ForeignKey(Schedule, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    run_set = models.ForeignKey(RunSet, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    change_point = models.ForeignKey(ChangePoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    runs = models.ManyToManyField(Run, blank=True, related_name="alerts", help_text="The runs behind it.")

    class Meta:
        ordering = ["-opened_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "condition"],
                condition=Q(state__in=["open", "acknowledged"]),
                name="one_unresolved_alert_per_condition",
            )
        ]
        indexes = [
            models.Index(fields=["team", "state", "-opened_at"], name="alert_team_state_opened"),
            models.Index(fields=["team", "condition"], name="alert_team_condition"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.state})"

    @property
    def is_resolved(self) -> bool:
        return self.state == self.State.RESOLVED

    @property
    def can_be_expected(self) -> bool:
        return self.kind == Kind.REGRESSION and not self.is_resolved

    def run_list(self, limit: int = 20) -> list[Run]:
        """The runs behind it, newest first (a disk that failed a hundred times shows its last few)."""
        return list(self.runs.order_by("-created_at", "-pk").only("pk", "state", "created_at", "finished_at")[:limit])
