"""The beat tick: turn schedule fires into runs, then start what is due.

Beat only calls `tick()` every few seconds; the Schedule rows say what fires when
(docs/decisions/0003-schedules-owned-by-benchweb.md).
Each fire creates one run per (target, profile) keyed unique(schedule, fire_time, disk, profile), so a
duplicated tick or a second beat process creates nothing twice. A fire missed by more than the schedule's
grace (beat or the workers were down) is recorded as *skipped* with the reason, never launched late in a pile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Prefetch, Q
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import clock, runners, scheduling
from jobs.alerts import boundary
from jobs.alerts import evaluate as alerts
from jobs.models import Disk, Run, RunSet, Schedule, ScheduleProfile
from jobs.runs import queueing, states, steps, sweeping
from jobs.sets import advancing, requesting

log = logging.getLogger(__name__)

# Beyond the profiles' own runtime: connecting, laying out test files, collecting.
RUN_OVERHEAD_S = 30.0
SEQUENCE_GAP_S = 5.0
WINDOW_CLOSED = "skipped: outside the schedule's active window (it ended before the disk was free)"


@dataclass(frozen=True)
class PlannedRun:
    disk: Any
    profile: Any
    offset_s: float
    slot: int  # 1-based target position
    slots: int


def _durations(profiles: list[Any]) -> list[float]:
    return [_duration(p) for p in profiles]


def _duration(profile: Any) -> float:
    """How long one profile takes on one target: a sweep, every point with its overhead; a latency-target search,
    its most runs."""
    shaped = [profile.at_point(point) for point in profile.sweep().points] if profile.is_sweep else [profile]
    runs = profile.sla_max_runs if profile.is_sla else 1
    return runs * sum(runners.expected_seconds(p.parameters()) + RUN_OVERHEAD_S for p in shaped)


def sequence_seconds(profiles: list[Any]) -> float:
    """How long the profiles take one after another on one target, gaps included."""
    durations = _durations(profiles)
    return scheduling.sequence_offsets(durations, gap_s=SEQUENCE_GAP_S)[-1] + durations[-1] if durations else 0.0


def plan(schedule: Schedule) -> list[PlannedRun]:
    """Every (target, profile) of one fire of a saved schedule, with its offset from the fire time."""
    # .all() so that prefetched targets and profiles (materialise loads them in bulk) are used.
    profiles = [sp.profile for sp in sorted(schedule.scheduleprofile_set.all(), key=lambda sp: sp.position)]
    return plan_for(list(schedule.targets.all()), profiles, schedule)


def plan_for(disks: list[Any], profiles: list[Any], schedule: Schedule) -> list[PlannedRun]:
    if not profiles or not disks:
        return []
    disks = sorted(disks, key=lambda d: (d.host.name, d.label))
    sequence = scheduling.sequence_offsets(_durations(profiles), gap_s=SEQUENCE_GAP_S)
    total = sequence_seconds(profiles)
    targets = [
        scheduling.Target(key=disk.pk, host=str(disk.host_id), site=disk.host.site or "", duration_s=total)
        for disk in disks
    ]
    # A group schedule's targets start together: its members are told one instant (states.claim_group).
    offsets = (
        [0.0] * len(targets)
        if schedule.as_group
        else scheduling.stagger_offsets(
            targets, stagger_s=schedule.stagger_s, auto=schedule.auto_stagger, by_site=schedule.auto_stagger_by_site
        )
    )
    return [
        PlannedRun(disk, profile, offset + sequence[j], i + 1, len(disks))
        for i, (disk, offset) in enumerate(zip(disks, offsets, strict=True))
        for j, profile in enumerate(profiles)
    ]


def fire(schedule: Schedule, fire_time: datetime, now: datetime, *, trigger: str = Run.Trigger.SCHEDULE) -> int:
    """Create the runs of one fire (idempotent). Returns how many rows were offered."""
    rows, sweeps = fire_rows(schedule, fire_time, now, trigger=trigger)
    rows += make_sweeps(sweeps, schedule, fire_time, now, trigger)
    # ignore_conflicts makes a repeated fire a no-op (the unique key), so the rows are counted, not re-read.
    Run.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows) + len(_fire_sets(sweeps, schedule))


def unrunnable(disks: list[Any], profiles: list[Any]) -> list[str]:
    """Why pairs of a schedule's targets and profiles cannot run (Disk.refusal_for, the rule Run now uses), one
    sentence each: the schedule form and the API refuse such a schedule instead of letting every fire fail."""
    return [refusal for disk in disks for profile in profiles if (refusal := queueing.refusal_text(disk, profile))]


def fire_rows(
    schedule: Schedule,
    fire_time: datetime,
    now: datetime,
    *,
    trigger: str = Run.Trigger.SCHEDULE,
) -> tuple[list[Run], list[tuple[PlannedRun, datetime]]]:
    """The unsaved runs of one fire: pending with their stagger slot, or skipped when the fire was missed.
    Their limits snapshot is taken when they launch (launching.launch), not here in the beat tick.
    A sweep's (or a latency-target search's) fire is its set, made by make_sweeps: those come back apart, with
    their start, unless the fire was missed or refused (then one run of its profile says so, as for any profile);
    so does every (target, profile) of a group schedule, whose fire is one group a profile."""
    missed = scheduling.misfired(fire_time, now, schedule.misfire_grace_s)
    rows = []
    sweeps = []
    for planned in plan(schedule):
        not_before = fire_time + timedelta(seconds=planned.offset_s)
        if missed:
            state, explanation = (
                Run.State.SKIPPED,
                (
                    f"skipped: this fire at {clock.utc_text(fire_time)} was missed by "
                    f"{(now - fire_time).total_seconds():.0f} s (beat or the workers were down; grace "
                    f"{schedule.misfire_grace_s} s), so it was not started late"
                ),
            )
        elif schedule.as_group:
            # One group a profile, refused whole (every target's run says why) when one member is: make_sweeps.
            sweeps.append((planned, not_before))
            continue
        elif refusal := queueing.refusal_text(planned.disk, planned.profile):
            # The disk or profile changed since the schedule was saved: say why, as Run now would, not at launch.
            state, explanation = Run.State.FAILED, f"not started: {refusal}"
        elif planned.profile.is_set:
            sweeps.append((planned, not_before))
            continue
        else:
            # Times in explanations are written in UTC; pages show them in their reader's zone (clock.in_zone).
            state, explanation = Run.State.PENDING, (
                f"waiting: stagger slot {planned.slot} of {planned.slots} at {clock.utc_text(not_before)}"
                if not_before > now else "waiting to start"
            )  # fmt: skip
        rows.append(Run(
            disk=planned.disk, team_id=planned.disk.team_id, profile=planned.profile,
            profile_name=planned.profile.name, parameters=planned.profile.parameters(), schedule=schedule,
            fire_time=fire_time, trigger=trigger, state=state, explanation=explanation, not_before=not_before,
            destructive=planned.disk.destructive_for(planned.profile),
            finished_at=now if state != Run.State.PENDING else None,
        ))  # fmt: skip
    return rows, sweeps


def make_sweeps(
    sweeps: list[tuple[PlannedRun, datetime]], schedule: Schedule, fire_time: datetime, now: datetime, trigger: str
) -> list[Run]:
    """Make the sets of a fire's sweeps and latency-target searches, or a group schedule's groups (each once: a fire
    made again finds its set and makes nothing); a set refused whole now (longer than the team's bound; a group
    member the safety rules refuse) comes back as a failed run saying why, one a target it would have run on."""
    failed = []
    for made in _fire_sets(sweeps, schedule):
        first, not_before = made[0]
        try:
            with transaction.atomic():
                when: requesting.When = {"trigger": trigger, "schedule": schedule, "fire_time": fire_time,
                                         "not_before": not_before}  # fmt: skip
                if schedule.as_group:
                    requesting.create_group([planned.disk for planned, _ in made], first.profile, **when)
                else:
                    requesting.create_set(first.disk, first.profile, **when)
        except IntegrityError:
            continue  # this fire's set was made before
        except queueing.RunRefused as refused:
            failed += [Run(
                disk=planned.disk, team_id=planned.disk.team_id, profile=planned.profile,
                profile_name=planned.profile.name, parameters=planned.profile.parameters(), schedule=schedule,
                fire_time=fire_time, trigger=trigger, state=Run.State.FAILED, explanation=f"not started: {refused}",
                not_before=not_before, finished_at=now,
            ) for planned, _ in made]  # fmt: skip
    return failed


def _fire_sets(
    sweeps: list[tuple[PlannedRun, datetime]], schedule: Schedule
) -> list[list[tuple[PlannedRun, datetime]]]:
    """The sets one fire makes: one a (target, profile) for sweeps; one a profile, its targets in plan order, for a
    group schedule."""
    if not schedule.as_group:
        return [[entry] for entry in sweeps]
    by_profile: dict[int, list[tuple[PlannedRun, datetime]]] = {}
    for entry in sweeps:
        by_profile.setdefault(entry[0].profile.pk, []).append(entry)
    return list(by_profile.values())


def group_problems(schedule: Schedule, disks: list[Any], profiles: list[Any]) -> dict[str, list[str]]:
    """Why a group schedule could not fire, by the field to blame (`targets`, `profiles`, `stagger_s`): each profile
    as a group on all the targets (requesting.group_problem: the number of targets, a one-at-a-time host holding
    two, a set profile, a member the safety rules refuse), and a stagger, since a group's members start together.
    Empty for a schedule that is not a group's."""
    if not schedule.as_group:
        return {}
    found: dict[str, list[str]] = {}
    if schedule.auto_stagger or schedule.stagger_s:
        found["stagger_s"] = ["A group's members start together: set the stagger to 0 and clear auto-stagger, or "
                              "clear “run as a group”."]  # fmt: skip
    ordered = sorted(disks, key=lambda d: (d.host.name, d.label))
    for profile in profiles:
        if problem := requesting.group_problem(ordered, profile):
            field, message = problem
            found.setdefault("targets" if field == "disks" else "profiles", []).append(message)
    return found


def materialise(now: datetime | None = None) -> int:
    """Create the runs (and sweeps) of every fire that came due since the last tick, in one transaction; how many.

    The due schedules are read FOR UPDATE SKIP LOCKED (PostgreSQL; SQLite's IMMEDIATE transaction takes the
    write lock up front), so a second beat either waits for this one or skips the rows it holds, and then
    finds them no longer due. All runs go in with one INSERT and all schedules move on with one UPDATE; the
    unique key on runs stays the last guard: a fire offered twice creates nothing twice.

    Fires are made up to CLAIM_LEAD ahead of `now`, so that even the first target of a fire (stagger slot 1)
    is claimed and launched early and its wrapper waits on the host for the exact second."""
    now = now or timezone.now()
    horizon = now + states.CLAIM_LEAD
    with queueing.tick_transaction():
        due = list(
            Schedule.objects.select_for_update(skip_locked=True)
            .filter(enabled=True, next_fire_at__lte=horizon)
            .order_by()
            .prefetch_related(
                # Only what plan() and the new runs need: a host row carries its pinned key and more.
                Prefetch(
                    "targets",
                    queryset=Disk.objects.select_related("host").only(
                        "label", "kind", "team_id", "host__name", "host__site", "host__exclusive"
                    ),
                ),
                Prefetch("scheduleprofile_set", queryset=ScheduleProfile.objects.select_related("profile")),
            )
        )
        if not due:
            return 0
        rows: list[Run] = []
        sets = 0
        for schedule in due:
            rule = schedule.rule()
            assert schedule.next_fire_at is not None  # due: its next_fire_at is at most the horizon
            since = schedule.checked_until or (schedule.next_fire_at - timedelta(seconds=1))
            fires, upcoming = scheduling.fires_and_next(rule, since, horizon)
            for fire_time in fires:
                made, sweeps = fire_rows(schedule, fire_time, now)
                rows += made + make_sweeps(sweeps, schedule, fire_time, now, Run.Trigger.SCHEDULE)
                sets += len(_fire_sets(sweeps, schedule))
            schedule.checked_until = horizon
            schedule.next_fire_at = upcoming
            schedule.last_fire_at = fires[-1] if fires else schedule.last_fire_at
        Run.objects.bulk_create(rows, ignore_conflicts=True)
        _save_bookkeeping(due)
        _judge_alerts(rows)
        for row in rows:
            if row.destructive and row.state == Run.State.PENDING:  # rare: writes to a raw block device
                assert row.schedule is not None and row.fire_time is not None  # fire_rows sets both
                audit.record(row.disk.team, None, AuditEvent.Action.DESTRUCTIVE_RUN, None, disk=str(row.disk),
                             device=row.disk.target_path, profile=row.profile_name, trigger=row.trigger,
                             schedule=row.schedule.name, fire_time=row.fire_time.isoformat())  # fmt: skip
    return len(rows) + sets


def _judge_alerts(rows: list[Run]) -> None:
    """Fires skipped, and runs made failed (a target or profile changed since the schedule was saved), are alerts'
    business once the tick commits."""
    skipped = {row.schedule_id for row in rows if row.state == Run.State.SKIPPED and row.schedule_id}
    failed = {(row.disk_id, row.profile_name) for row in rows if row.state == Run.State.FAILED}
    if skipped:
        boundary.after_commit(alerts.fires_skipped, skipped)
    if failed:
        boundary.after_commit(alerts.series_failed, failed)


def _save_bookkeeping(schedules: list[Schedule]) -> None:
    """checked_until, next_fire_at and last_fire_at of many schedules in one executemany round trip.

    bulk_update would build a CASE expression per field and row; its Python cost was a third of a busy tick."""
    # get_field is typed as any field or relation, and a column as optional: these are columns of the table.
    fields = [
        cast("Field[Any, Any]", Schedule._meta.get_field(name))
        for name in ("checked_until", "next_fire_at", "last_fire_at")
    ]
    quote = connection.ops.quote_name
    # Only model metadata (table and column names) goes into the text; the values are parameters.
    sql = "UPDATE {} SET {} WHERE {} = %s".format(  # noqa: S608
        quote(Schedule._meta.db_table), ", ".join(f"{quote(cast(str, f.column))} = %s" for f in fields), quote("id")
    )
    params = [[*(f.get_db_prep_save(getattr(s, f.attname), connection) for f in fields), s.pk] for s in schedules]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def expire_outside_window(now: datetime | None = None) -> int:
    """Pending scheduled runs whose window closed while they waited are skipped, with the reason."""
    now = now or timezone.now()
    closed = Run.objects.filter(schedule__window_end__isnull=False, schedule__window_end__lt=now)
    skipped = states.move_all(
        closed, (Run.State.PENDING,), Run.State.SKIPPED, finished_at=now, explanation=WINDOW_CLOSED
    )
    if skipped:  # rare: only then are the schedules looked up, so a tick with none costs no query more
        these = Run.objects.filter(state=Run.State.SKIPPED, finished_at=now, explanation=WINDOW_CLOSED)
        boundary.after_commit(alerts.fires_skipped, set(these.values_list("schedule_id", flat=True)))
    return skipped


def stop_unstarted(schedule: Schedule, now: datetime | None = None) -> int:
    """Pausing stops every fire of the schedule not yet started; returns how many runs it stops.

    Fires are made and claimed up to CLAIM_LEAD ahead, so a pause a few seconds before a fire finds its runs
    already made, queued, or launched with the wrapper waiting on the host for the exact second:
    1. pending runs (waiting for their stagger slot, their start or a busy disk) are cancelled at once;
    2. queued runs are marked cancel_requested: launch() ends them without connecting (and re-checks the
       schedule itself, for a claim that raced the pause);
    3. launching and running runs whose start (not_before) is still ahead are marked too: the next poll stops
       the waiting wrapper before the tool starts, and says that nothing ran.
    Runs whose start has come go on, and so do runs a person started with the schedule's Run now."""
    now = now or timezone.now()
    text = states.paused_explanation(schedule.name)
    fires = Run.objects.filter(schedule=schedule, trigger=Run.Trigger.SCHEDULE)
    # A group of a fire not yet started ends cancelled with its members, not failed for want of them.
    waiting_groups = RunSet.objects.filter(schedule=schedule, trigger=Run.Trigger.SCHEDULE, kind=RunSet.Kind.GROUP,
                                           state=RunSet.State.PENDING)  # fmt: skip
    groups = list(waiting_groups.values_list("pk", flat=True))
    waiting_groups.update(
        cancel_requested=True, explanation=f"cancelling: its schedule {schedule.name} was paused before it started"
    )
    stopped = states.move_all(fires, (Run.State.PENDING,), Run.State.CANCELLED, finished_at=now, explanation=text)
    for group in groups:
        advancing.advance(group)
    waiting = fires.filter(
        Q(state=Run.State.QUEUED) | Q(state__in=(Run.State.LAUNCHING, Run.State.RUNNING), not_before__gt=now),
        cancel_requested=False,
    )
    running = list(waiting.filter(state=Run.State.RUNNING).select_related("disk__host"))
    stopped += waiting.update(
        cancel_requested=True,
        explanation=f"cancelling: its schedule {schedule.name} was paused before this run started",
    )
    for run in running:
        transaction.on_commit(lambda run=run: steps.send("poll", run))  # type: ignore[misc]
    return stopped


def run_schedule_now(schedule: Schedule, user: Any = None) -> int:
    """'Run now' for a schedule: one fire at this moment, staggered as usual."""
    now = timezone.now().replace(microsecond=0)
    return fire(schedule, now, now, trigger=Run.Trigger.MANUAL)


def tick(now: datetime | None = None) -> str:
    now = now or timezone.now()
    with queueing.tick_transaction():  # one commit for the three steps that write
        created = materialise(now)
        skipped = expire_outside_window(now)
        claimed = queueing.dispatch_due(now)
    repolled = sweeping.sweep(now)
    ended = advancing.advance_stalled()
    return f"created {created}, skipped {skipped}, claimed {claimed}, re-polled {repolled}, sets ended {ended}"
