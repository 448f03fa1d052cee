"""A set of runs requested: a sweep's plan checked whole (its time against the team's bound, every point against
the safety rules) before anything is written, then the set and its members made at once and the first claimed; a
latency-target search checked the same way (its most runs against the bound), then made with its first member only;
a synchronised group checked member by member, then made with one member a disk, all claimed together; a group-size
sweep checked the same way over all its disks, then made with one member a disk for each size, the first size
claimed together.

A point refused refuses the sweep, a member refused the group: nothing is stored, and the message names the point
or the member and the fix."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

from django.core.exceptions import ValidationError
from django.db import transaction

from jobs.models import Disk, Profile, Run, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.sets import group_sizes, searching
from jobs.tools import sweep_plan
from jobs.units import format_duration


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


class When(TypedDict, total=False):
    """Who asked for a set and when it runs, as queueing.create_run takes them for each member."""

    trigger: str
    user: Any
    not_before: Any
    schedule: Any
    fire_time: Any


def create_sweep(disk: Disk, profile: Profile, **when: Unpack[When]) -> RunSet:
    """A pending sweep and its members, one pending run a point in the plan's order; none claimed yet."""
    queueing.check_team(disk, profile)
    plan = sweep_plan_of(disk, profile)
    return _create(RunSet.Kind.SWEEP, disk, profile, plan_json(plan), profile.sweep_on_failure, plan.points, when)


def request_sweep(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> RunSet:
    """Make a sweep and start its first point now if the disk is free; otherwise it waits and says why."""
    return _start(create_sweep(disk, profile, trigger=trigger, user=user))


def create_set(disk: Disk, profile: Profile, **when: Unpack[When]) -> RunSet:
    """A set profile (Profile.is_set) made as its kind of set, none of its members claimed: a schedule's fire."""
    if profile.is_sla:
        return create_sla(disk, profile, **when)
    return create_sweep(disk, profile, **when)


def request_set(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> RunSet:
    """Start a set profile (Profile.is_set) as its kind of set: a sweep, or a latency-target search."""
    if profile.is_sla:
        return request_sla(disk, profile, trigger=trigger, user=user)
    if profile.is_sweep:
        return request_sweep(disk, profile, trigger=trigger, user=user)
    raise RunRefused("profile", f"{profile.name} is a single run, not a set: start it with Run now as any run.")


def sla_plan_of(disk: Disk, profile: Profile) -> dict[str, Any]:
    """A latency-target search's plan on this disk, refused (RunRefused on `profile`) when it cannot run: its
    settings do not hold, its most runs take longer than the team's bound, or the safety rules refuse the profile
    (a rate cap changes nothing they judge, so its unthrottled first run stands for every step)."""
    try:
        profile.full_clean(exclude=["team", "name"], validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
        raise RunRefused("profile", f"{profile.name} cannot run on disk {disk.label}: {problems}") from exc
    plan = searching.plan_json(profile)
    bound = disk.team.sweep_bound_s
    if plan["total_s"] > bound:
        fewer = bound // max(1, plan["seconds_per_step"])
        fit = f"at most {fewer} runs" if fewer >= 2 else "a shorter runtime a step"
        raise RunRefused(
            "profile",
            f"{profile.name} cannot run on disk {disk.label}: its search takes up to "
            f"{format_duration(plan['total_s'])} ({profile.sla_max_runs} runs × "
            f"{format_duration(plan['seconds_per_step'])}), longer than the team's bound of "
            f"{format_duration(bound)}: it fits with {fit}.",
        )
    if refusal := queueing.refusal_text(disk, profile.at_point({})):
        raise RunRefused("profile", refusal)
    return plan


def create_sla(disk: Disk, profile: Profile, **when: Unpack[When]) -> RunSet:
    """A pending latency-target search and its first member, the unthrottled run; each later member is made when
    the one before it ends (jobs/sets/searching.py)."""
    queueing.check_team(disk, profile)
    plan = sla_plan_of(disk, profile)
    return _create(RunSet.Kind.SLA, disk, profile, plan, RunSet.OnFailure.STOP, [{}], when)


# A group's members: at least two (one disk is a run), at most this many (the launches of one instant).
GROUP_MIN_MEMBERS = 2


GROUP_MAX_MEMBERS = 100


def group_problem(disks: Sequence[Disk], profile: Profile) -> tuple[str, str] | None:
    """Why `profile` cannot run as a group on `disks` (in member order), with the field to blame, or None: the number
    of members, a disk given twice, a disk of another team, two members on a host that runs one benchmark at a
    time (`disks`), a set profile or another team's (`profile`), or the first member the safety rules refuse, named
    with its disk, host and fix (`disks`)."""
    if not GROUP_MIN_MEMBERS <= len(disks) <= GROUP_MAX_MEMBERS:
        given = f"{len(disks)} {'was' if len(disks) == 1 else 'were'} given"
        bounds = f"{GROUP_MIN_MEMBERS} to {GROUP_MAX_MEMBERS}"
        return "disks", f"A group has {bounds} members, one a disk; {given}: choose {bounds} disks."
    if twice := sorted(str(disk) for disk, count in Counter(disks).items() if count > 1):
        return "disks", (f"Disk {', '.join(twice)} is given more than once; each member of a group runs on a disk "
                         f"of its own.")  # fmt: skip
    team = disks[0].team_id
    if stranger := next((n for n, disk in enumerate(disks, 1) if disk.team_id != team), None):
        return "disks", f"Member {stranger}: a group's disks all belong to one team; choose disks of yours."
    if profile.team_id not in (None, team):
        return "profile", "That profile belongs to another team; choose one of yours or a built-in one."
    if profile.is_set:
        return "profile", (f"{profile.name} is a set profile (a sweep or a latency-target search): a group runs one "
                           f"profile that is a single run; choose one.")  # fmt: skip
    hosts = Counter(disk.host_id for disk in disks if disk.host.exclusive)
    if crowded := next((disk.host for disk in disks if hosts[disk.host_id] > 1), None):
        return "disks", (f"Host {crowded.name} runs one benchmark at a time, so its disks cannot start together: "
                         f"keep one of them in the group, or clear “one benchmark at a time” on the host.")  # fmt: skip
    for number, disk in enumerate(disks, 1):
        if refusal := queueing.refusal_text(disk, profile):
            return "disks", (f"Member {number} (disk {disk.label} on host {disk.host.name}) is refused, so the whole "
                             f"group is, and nothing was started: {refusal}")  # fmt: skip
    return None


# A group's backend caps (the team's word for what the shared backend gives, e.g. a cluster's QoS total), as
# plan["cap_iops"] and plan["cap_mb_s"]: what the group's limit is computed from.
GROUP_CAPS = {"cap_iops": "IOPS", "cap_mb_s": "MB/s"}


def group_caps(caps: dict[str, Any] | None) -> dict[str, float]:
    """The caps given (None and absent ones left out), refused (RunRefused on the cap) unless each is a positive
    finite number."""
    found = {}
    for name, value in (caps or {}).items():
        if name not in GROUP_CAPS:
            raise RunRefused(name, f"A group takes no {name}; its caps are {', '.join(GROUP_CAPS)}.")
        if value is None:
            continue
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
        if not (math.isfinite(number) and number > 0):
            raise RunRefused(name, f"Give the backend's cap in {GROUP_CAPS[name]} as a number above 0, e.g. 50000; "
                                   f"or leave it out when the backend has none.")  # fmt: skip
        found[name] = number
    return found


def synchronisation(synchronised_by: str, profile: Profile) -> dict[str, str]:
    """The plan's word on how the members start together: {} for benchweb's shared instant (the default), or
    {"synchronised_by": "fio"} for fio's client/server mode, which only a fio profile has (RunRefused else)."""
    if synchronised_by not in RunSet.SYNCHRONISED_BY:
        choices = " or ".join(RunSet.SYNCHRONISED_BY)
        raise RunRefused("synchronised_by", f"A group is synchronised by {choices}, not {synchronised_by!r}; leave "
                                            "it out for benchweb's shared start.")  # fmt: skip
    if synchronised_by != RunSet.BY_FIO:
        return {}
    if profile.tool != Profile.Tool.FIO:
        raise RunRefused("synchronised_by", f"{profile.name} runs {profile.tool}: only fio has a client/server mode; "
                                            "choose a fio profile, or leave synchronised_by out.")  # fmt: skip
    return {"synchronised_by": RunSet.BY_FIO}


def create_group(
    disks: Sequence[Disk],
    profile: Profile,
    caps: dict[str, Any] | None = None,
    synchronised_by: str = "benchweb",
    **when: Unpack[When],
) -> RunSet:
    """A pending group and its members, one pending run a disk in the order given; none claimed yet. Every member
    is checked before anything is written: one refused refuses the group (RunRefused on `disks` or `profile`, on
    a cap that is not a positive number, or on a synchronisation the profile cannot have)."""
    if problem := group_problem(disks, profile):
        raise RunRefused(*problem)
    plan: dict[str, Any] = {"disks": [disk.pk for disk in disks], **group_caps(caps),
                            **synchronisation(synchronised_by, profile)}  # fmt: skip
    with transaction.atomic():
        run_set = _new_set(RunSet.Kind.GROUP, disks[0], profile, plan, RunSet.OnFailure.CONTINUE, when)
        for disk in disks:
            queueing.create_run(disk, profile, run_set=run_set, point={}, **when)
    return run_set


def request_group(
    disks: Sequence[Disk],
    profile: Profile,
    caps: dict[str, Any] | None = None,
    *,
    synchronised_by: str = "benchweb",
    trigger: str = Run.Trigger.MANUAL,
    user: Any = None,
) -> RunSet:
    """Make a group and start its members together now if every disk is free; otherwise it waits and says which
    disk it waits for."""
    run_set = create_group(disks, profile, caps, synchronised_by, trigger=trigger, user=user)
    states.claim_group(run_set.pk)
    run_set.refresh_from_db()
    return run_set


def create_group_sizes(
    disks: Sequence[Disk], profile: Profile, sizes: Sequence[int] | None = None, **when: Unpack[When]
) -> RunSet:
    """A pending group-size sweep: for each size k (`sizes`, by default 1, 2, 4, … up to the number of disks), a
    pending member on each of the first k disks, size after size; none claimed yet. The sizes and every disk are
    checked before anything is written, as a group of all the disks is: one refused refuses the sweep (RunRefused
    on `sizes`, `disks` or `profile`)."""
    sizes = list(sizes) if sizes is not None else group_sizes.default_sizes(len(disks))
    if problem := group_sizes_problem(disks, profile, sizes):
        raise RunRefused(*problem)
    with transaction.atomic():
        plan = {"disks": [disk.pk for disk in disks], "sizes": sizes}
        # A size that did not all succeed ends the sweep: its larger groups hold the same disks.
        run_set = _new_set(RunSet.Kind.GROUP_SIZES, disks[0], profile, plan, RunSet.OnFailure.STOP, when)
        for size in sizes:
            for disk in disks[:size]:
                queueing.create_run(disk, profile, run_set=run_set, point={}, **when)
        run_set.members.filter(set_index__gte=sizes[0]).update(explanation=states.SMALLER_SIZES_FIRST)
    return run_set


def group_sizes_problem(disks: Sequence[Disk], profile: Profile, sizes: Sequence[int]) -> tuple[str, str] | None:
    """Why a group-size sweep cannot run, with the field to blame, or None: the number of disks first (sizes over
    one disk would be judged against the wrong count), then the sizes, then the disks and the profile as a group of
    all the disks is judged (group_problem: `disks` or `profile`)."""
    if not GROUP_MIN_MEMBERS <= len(disks) <= GROUP_MAX_MEMBERS:
        return group_problem(disks, profile)
    if problem := group_sizes.sizes_problem(sizes, len(disks)):
        return "sizes", problem
    return group_problem(disks, profile)


def request_group_sizes(
    disks: Sequence[Disk],
    profile: Profile,
    sizes: Sequence[int] | None = None,
    *,
    trigger: str = Run.Trigger.MANUAL,
    user: Any = None,
) -> RunSet:
    """Make a group-size sweep and start its first size now if its disks are free; otherwise it waits and says
    which disk it waits for. Each later size starts when the one before it has ended."""
    run_set = create_group_sizes(disks, profile, sizes, trigger=trigger, user=user)
    return _start(run_set)


def _create(
    kind: str, disk: Disk, profile: Profile, plan: dict[str, Any], on_failure: str, points: list[Any], when: When
) -> RunSet:
    """The set and a pending member at each of `points`, in one transaction; none claimed yet."""
    with transaction.atomic():
        run_set = _new_set(kind, disk, profile, plan, on_failure, when)
        for point in points:
            queueing.create_run(disk, profile, run_set=run_set, point=point, **when)
    return run_set


def _new_set(kind: str, disk: Disk, profile: Profile, plan: dict[str, Any], on_failure: str, when: When) -> RunSet:
    """A pending set of `kind` holding `disk` once it runs (a group: its first member's), without members yet."""
    user = when.get("user")
    return RunSet.objects.create(
        kind=kind,
        disk=disk,
        profile=profile,
        profile_name=profile.name,
        base_parameters=profile.parameters(),
        plan=plan,
        on_failure=on_failure,
        trigger=when.get("trigger", Run.Trigger.MANUAL),
        created_by=user if getattr(user, "is_authenticated", False) else None,
        schedule=when.get("schedule"),
        fire_time=when.get("fire_time"),
        explanation="waiting to start",
    )


def request_sla(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> RunSet:
    """Make a latency-target search and start its first run now if the disk is free; otherwise it waits."""
    return _start(create_sla(disk, profile, trigger=trigger, user=user))


def _start(run_set: RunSet) -> RunSet:
    """Claim the set's first member; when the disk is busy the set says why, as its first member does."""
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
