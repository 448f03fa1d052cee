"""Sets of runs: runs made and held together, with one hold, one cancel, one page and one result beside their
members' (docs/architecture.md, "Sets of runs").

A sweep is a set of runs of one profile at the points of its axes, one after another on one disk; an SLA search is
a set whose next point the last ones decide; a synchronised group is one profile on several disks started at one
instant (jobs/sets/requesting.py request_group); a group-size sweep is the group of its first 1, 2, 4, … disks, one
size after another (request_group_sizes). Each kind is the same machinery: the hold, the cancel and the states
below are the set's, whatever its members.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from jobs.models.disks import Disk
from jobs.models.profiles import Profile
from jobs.models.schedules import Schedule
from jobs.models.teams import Team


class RunSet(models.Model):
    class Kind(models.TextChoices):
        SWEEP = "sweep", "Sweep"
        SLA = "sla", "Latency-target search"
        GROUP = "group", "Synchronised group"
        GROUP_SIZES = "group_sizes", "Group-size sweep"

    class State(models.TextChoices):
        PENDING = "pending", "Pending"  # made; no member has started, and the set holds nothing yet
        RUNNING = "running", "Running"  # a member has started: the set holds its disk until it ends
        SUCCEEDED = "succeeded", "Succeeded"  # every member succeeded
        FAILED = "failed", "Failed"  # it ended, and some member did not succeed (the others' results stand)
        CANCELLED = "cancelled", "Cancelled"

    class OnFailure(models.TextChoices):
        CONTINUE = "continue", "go on with the next point"
        STOP = "stop", "stop the sweep"

    UNFINISHED_STATES = ("pending", "running")
    FINAL_STATES = ("succeeded", "failed", "cancelled")
    # The kinds whose members start together on several disks: a group, and each size of a group-size sweep.
    TOGETHER_KINDS = ("group", "group_sizes")
    # How a group's members start together (plan["synchronised_by"]): benchweb's shared start instant (the
    # default), or fio's client/server mode.
    SYNCHRONISED_BY = ("benchweb", "fio")
    BY_FIO = "fio"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="run_sets", editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SWEEP)
    # A group's first member's disk: the hold's unique index below is on one disk (plan["disks"] has them all).
    disk = models.ForeignKey(Disk, on_delete=models.CASCADE, related_name="run_sets")
    profile = models.ForeignKey(Profile, on_delete=models.SET_NULL, null=True, blank=True, related_name="run_sets")
    profile_name = models.CharField(max_length=100, blank=True)
    base_parameters = models.JSONField(default=dict, help_text="The base profile's parameters when the set was made.")
    plan = models.JSONField(
        default=dict,
        help_text='A sweep: {"axes": [{"field", "values"}], "points": [{field: value}]}; an SLA search: its target; '
        'a group: {"disks": [disk id, ...]}, its members\' disks in order; a group-size sweep: {"disks": [...], '
        '"sizes": [1, 2, ...]}, a group of the first k disks for each size k.',
    )
    on_failure = models.CharField(max_length=8, choices=OnFailure.choices, default=OnFailure.CONTINUE)
    schedule = models.ForeignKey(Schedule, on_delete=models.SET_NULL, null=True, blank=True, related_name="run_sets")
    fire_time = models.DateTimeField(null=True, blank=True)
    # The same values as Run.Trigger (jobs/models/runs.py), which its members carry.
    trigger = models.CharField(
        max_length=10,
        choices=[("manual", "Manual"), ("schedule", "Schedule"), ("api", "API"), ("import", "Import")],
        default="manual",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    explanation = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(
        null=True, blank=True, help_text="The set's own result beside its members': a sweep's knee, an SLA answer."
    )
    driven_at = models.DateTimeField(
        null=True, blank=True, help_text="A group run by fio's client/server mode: when a worker took its fio client."
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # The hold: one running set per disk; a second waits until the first ends (jobs/runs/states.py claim).
            models.UniqueConstraint(fields=["disk"], condition=Q(state="running"), name="one_running_set_per_disk"),
            models.UniqueConstraint(
                fields=["schedule", "fire_time", "disk", "profile"],
                condition=Q(schedule__isnull=False),
                name="one_set_per_schedule_fire_disk_profile",
            ),
        ]
        indexes = [
            models.Index(fields=["team", "disk", "-created_at"], name="runset_team_disk_created"),
            models.Index(fields=["state"], name="runset_state"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display().lower()} {self.pk} on {self.disk} ({self.state})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.team_id = self.disk.team_id
        super().save(*args, **kwargs)

    @property
    def label(self) -> str:
        """'sweep 12', as a waiting run names the set that holds its disk."""
        return self.label_of(self.kind, self.pk)

    @classmethod
    def label_of(cls, kind: str, pk: int | None) -> str:
        names: dict[str, str] = {
            cls.Kind.SWEEP: "sweep",
            cls.Kind.GROUP: "group",
            cls.Kind.GROUP_SIZES: "group-size sweep",
        }
        return f"{names.get(kind, 'latency-target search')} {pk}"

    @classmethod
    def holding_text(cls, kind: str, pk: int | None) -> str:
        """Why a run waits for the disk a set holds: 'waiting: disk held by sweep 12 until its last point ends'."""
        last = "member" if kind in cls.TOGETHER_KINDS else "point"
        return f"waiting: disk held by {cls.label_of(kind, pk)} until its last {last} ends"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES

    @property
    def run_by_fio(self) -> bool:
        """A group synchronised by fio's client/server mode (plan["synchronised_by"] "fio"), not by benchweb's
        shared start instant (docs/user-guide/groups.md#running-with-fios-own-clientserver-mode)."""
        return self.kind == self.Kind.GROUP and (self.plan or {}).get("synchronised_by") == self.BY_FIO
