"""A set of runs requested: a sweep's plan checked whole (its time against the team's bound, every point against
the safety rules) before anything is written, then the set and its members made at once and the first claimed.

A point refused refuses the sweep: nothing is stored, and the message names the point and the fix."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from jobs.models import Disk, Profile, Run, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.tools import sweep_plan


def sweep_plan_of(disk: Disk, profile: Profile) -> sweep_plan.Plan:
    """The sweep's plan on this disk, refused (RunRefused on `profile`) when it cannot run whole: an axis the
    tool cannot take, a time over the team's bound, or a point the safety rules refuse."""
    try:
        plan = profile.sweep()
        sweep_plan.check_bound(plan, disk.team.sweep_bound_s)
    except sweep_plan.SweepError as exc:
        raise RunRefused("profile", f"{profile.name} cannot run on disk {disk.label}: {exc}") from exc
    if refusal := queueing.refusal_text(disk, profile):
        raise RunRefused("profile", refusal)
    return plan


def create_sweep(
    disk: Disk,
    profile: Profile,
    *,
    trigger: str = Run.Trigger.MANUAL,
    user: Any = None,
    not_before: Any = None,
    schedule: Any = None,
    fire_time: Any = None,
) -> RunSet:
    """A pending sweep and its members, one pending run a point in the plan's order; none claimed yet."""
    queueing.check_team(disk, profile)
    plan = sweep_plan_of(disk, profile)
    with transaction.atomic():
        run_set = RunSet.objects.create(
            kind=RunSet.Kind.SWEEP,
            disk=disk,
            profile=profile,
            profile_name=profile.name,
            base_parameters=profile.parameters(),
            plan=plan_json(plan),
            on_failure=profile.sweep_on_failure,
            trigger=trigger,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            schedule=schedule,
            fire_time=fire_time,
            explanation="waiting to start",
        )
        for point in plan.points:
            queueing.create_run(disk, profile, trigger=trigger, user=user, not_before=not_before, schedule=schedule,
                                fire_time=fire_time, run_set=run_set, point=point)  # fmt: skip
    return run_set


def request_sweep(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> RunSet:
    """Make a sweep and start its first point now if the disk is free; otherwise it waits and says why."""
    run_set = create_sweep(disk, profile, trigger=trigger, user=user)
    first = run_set.members.select_related("disk__host").order_by("set_index").first()
    if first is not None and not states.claim(first):
        first.refresh_from_db()
        RunSet.objects.filter(pk=run_set.pk).update(explanation=first.explanation)
    run_set.refresh_from_db()
    return run_set


def plan_json(plan: sweep_plan.Plan) -> dict[str, Any]:
    """The plan as a set stores it: the axes in order, the points, and the seconds they take."""
    return {
        "axes": [{"field": axis.field, "values": list(axis.values)} for axis in plan.axes],
        "points": plan.points,
        "seconds_per_point": plan.seconds_per_point,
        "total_s": plan.total_s,
    }
