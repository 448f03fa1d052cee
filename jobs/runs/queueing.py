"""Runs before they start: create (refused with the reason), queue (claim the disk, through the state machine),
and the beat tick's claim of every due run at once, whose launches go out by site.

The run-now buttons and API come here (`request_run`), and the beat tick (jobs/schedules/dispatcher.py,
`dispatch_due`); the database row is the truth, the broker message only a nudge
(docs/decisions/0002-database-is-the-truth.md). The one-run claim, pending -> queued when the disk is free, is
the state machine's (jobs/runs/states.py `claim`): a finishing run hands its disk on with it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Value, When
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import errors
from jobs.models import Disk, Profile, Run, RunSet
from jobs.runs import states, steps
from jobs.runs.occupancy import Occupancy, Place


class RunRefused(errors.FieldRefused):
    """A run that cannot be created; the message names the field and the fix."""


def create_run(
    disk: Disk,
    profile: Profile,
    *,
    trigger: str = Run.Trigger.MANUAL,
    user: Any = None,
    not_before: Any = None,
    schedule: Any = None,
    fire_time: Any = None,
    run_set: RunSet | None = None,
    point: dict[str, int] | None = None,
) -> Run:
    """A pending run of `profile` on `disk`; a set's member runs the profile at its `point` (its set_index is
    the number of members made before it)."""
    check_team(disk, profile)
    if profile.is_set and point is None:
        kind = "a sweep" if profile.is_sweep else "a latency-target search"
        raise RunRefused(
            "profile",
            f"{profile.name} is {kind}: start it as one (Run now on the disk page does; the API: POST /api/v1/sets/).",
        )
    shaped = profile.at_point(point) if point is not None else profile
    if refusal := refusal_text(disk, shaped):
        raise RunRefused("profile", refusal)
    run = Run.objects.create(
        disk=disk,
        profile=profile,
        profile_name=profile.name,
        parameters=shaped.parameters(),
        trigger=trigger,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        not_before=not_before,
        schedule=schedule,
        fire_time=fire_time,
        limits_snapshot=disk.limits_snapshot(shaped.block_size_bytes),
        destructive=disk.destructive_for(shaped),
        explanation="waiting to start",
        run_set=run_set,
        set_index=run_set.members.count() if run_set is not None else None,
        set_point=point,
    )
    if run.destructive:
        audit.record(disk.team, user, AuditEvent.Action.DESTRUCTIVE_RUN, run, disk=str(disk),
                     device=disk.target_path, profile=profile.name, trigger=trigger)  # fmt: skip
    return run


def check_team(disk: Disk, profile: Profile) -> None:
    """A team's disk runs only the team's profiles and the built-in ones."""
    if profile.team_id not in (None, disk.team_id):
        raise RunRefused("profile", "That profile belongs to another team; choose one of yours or a built-in one.")


def request_run(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> Run:
    """Create a run and start it now if its disk is free; otherwise it waits and says why."""
    run = create_run(disk, profile, trigger=trigger, user=user)
    states.claim(run)
    run.refresh_from_db()
    return run


def refusal_text(disk: Disk, profile: Profile) -> str | None:
    """Why profile cannot run on disk (Disk.refusal_for), as one sentence naming both; None when it can."""
    refusal = disk.refusal_for(profile)
    return f"{profile.name} cannot run on disk {disk.label}: {refusal.message}" if refusal else None


def dispatch_due(now: Any = None) -> int:
    """Claim every pending run whose time has come, oldest first, in one transaction. Called by the beat tick.

    One query reads the due runs, three what holds their disks (jobs/runs/occupancy.py); the free ones move to
    *queued* with one
    UPDATE and the waiting ones get their reason with another; one fan-out message asks a worker to launch
    them all. Exclusive hosts are locked as states.claim() locks them, and the partial unique index on active runs
    per disk still guards: if a run was claimed elsewhere meanwhile, this tick falls back to claim() one by one.
    """
    now = now or timezone.now()
    with tick_transaction():
        rows = list(
            Run.objects.filter(state=Run.State.PENDING)
            .exclude(not_before__gt=now + states.CLAIM_LEAD)
            .order_by("not_before", "pk")
            .values_list(
                "pk",
                "disk_id",
                "explanation",
                "disk__host_id",
                "disk__host__name",
                "disk__host__exclusive",
                "disk__host__site",
                "trigger",
                "schedule__enabled",
                "schedule__name",
            )
        )
        due = _drop_paused(rows, now)
        if not due:
            return 0
        # A set's members take turns and hold their disk between turns: claimed one by one (sets are few), and
        # the disks their sets hold are busy for every other run.
        members = set(
            Run.objects.filter(pk__in=[row[0] for row in due], run_set__isnull=False).values_list("pk", flat=True)
        )
        claimed_members = 0
        if members:
            groups: set[int] = set()
            for run in (
                Run.objects.filter(pk__in=members).select_related("disk__host", "run_set").order_by("set_index", "pk")
            ):
                # A group's members are claimed together, by its first due one; a group-size sweep's next size,
                # by its first pending member.
                if run.run_set is not None and run.run_set.kind in RunSet.TOGETHER_KINDS:
                    if run.run_set.pk in groups:
                        continue
                    groups.add(run.run_set.pk)
                claimed_members += states.claim_members(run, now)
            due = [row for row in due if row[0] not in members]
        places = {row[0]: Place(row[1], row[3], row[4], row[5]) for row in due}
        occupancy = Occupancy.of(places.values())
        free: dict[int, str] = {}  # run -> its host's site
        reasons: dict[int, str] = {}
        for run_pk, _, explanation, _, _, _, site in due:
            if reason := occupancy.why(places[run_pk]):
                if explanation != reason:
                    reasons[run_pk] = reason
                continue
            free[run_pk] = site
            occupancy.take(places[run_pk], run_pk)
        if reasons:
            Run.objects.filter(pk__in=reasons, state=Run.State.PENDING).update(
                explanation=Case(*(When(pk=pk, then=Value(text)) for pk, text in reasons.items()))
            )
        return _claim_together(free, now) + claimed_members


def _drop_paused(due: list[Any], now: Any) -> list[Any]:
    """The due rows without their last three fields (trigger, schedule enabled, schedule name); the fires of a
    schedule paused since they were made are cancelled instead. The pause cancels them itself
    (dispatcher.stop_unstarted): this re-check catches a fire that raced it."""
    paused = {row[0]: row[9] for row in due if row[7] == Run.Trigger.SCHEDULE and row[8] is False}
    if paused:
        states.move_all(
            Run.objects.filter(pk__in=paused),
            (Run.State.PENDING,),
            Run.State.CANCELLED,
            finished_at=now,
            explanation=Case(
                *(When(pk=pk, then=Value(states.paused_explanation(name))) for pk, name in paused.items())
            ),
        )
    return [row[:7] for row in due if row[0] not in paused]


@contextmanager
def tick_transaction() -> Iterator[None]:
    """The beat tick's transaction. On PostgreSQL its commit does not wait for the WAL flush
    (synchronous_commit off, for this transaction only): after a database crash the last few hundred
    milliseconds of tick writes may be gone, and that is safe, because they are re-derived. Lost runs of a
    fire are created again by the next tick (the unique key stops doubles), and a lost claim leaves its run
    pending, so the launch message finds nothing queued and the next tick claims it again. Anything a worker
    commits afterwards is flushed together with the earlier tick writes it saw. SQLite runs WAL with
    synchronous=NORMAL, which already commits without a flush."""
    outermost = not connection.in_atomic_block
    # Inside the tick's own transaction the steps share it: no savepoint round trips.
    with transaction.atomic(savepoint=False):
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield


def _claim_together(sites: dict[int, str], now: Any) -> int:
    """pending -> queued for runs already judged free (run id -> its host's site); one UPDATE, and after the
    commit one fan-out message per site."""
    if not sites:
        return 0
    ids = list(sites)
    try:
        with transaction.atomic():
            claimed = states.move_all(Run.objects.filter(pk__in=ids), (Run.State.PENDING,), Run.State.QUEUED,
                                      queued_at=now, heartbeat_at=now, explanation=steps.QUEUED_TEXT)  # fmt: skip
    except IntegrityError:
        # A run on one of these disks was claimed elsewhere since we looked: claim them one at a time.
        runs = Run.objects.filter(pk__in=ids).select_related("disk__host").order_by("not_before", "pk")
        return sum(states.claim(run, now) for run in runs)
    # A run cancelled in between stays cancelled: launch() only moves queued runs on.
    transaction.on_commit(lambda: steps.send_launches(sites))
    return claimed
