"""The run state machine: the only module that changes `Run.state`. The moves a run may make are declared once,
in MOVES; every step of a run calls `move` (one run), `move_all` (many at once) or `finish` (a final state).

A run holds its disk in the active states (`Run.ACTIVE_STATES`), so the two moves that take and give back a disk
live here too: `claim` (pending -> queued, when the disk is free) and `finish`, which hands the disk to the runs
waiting for it in the same transaction. docs/architecture.md has the states and who moves a run between them.
(New rows are made in a state, not moved into it: queueing.create_run, the tick's fires, an import.)"""

from __future__ import annotations

import os
from datetime import UTC, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from jobs.alerts import boundary, evaluate
from jobs.models import Disk, Run, RunSet, Schedule
from jobs.runs import steps
from jobs.runs.occupancy import Occupancy, Place
from jobs.sets import group_sizes

State = Run.State

# Forward only, and out of any unfinished state to a final one; nothing leaves a final state. launching ->
# launching is a launch tried again (its answer was lost).
MOVES: dict[str, tuple[str, ...]] = {
    State.PENDING: (State.QUEUED, *Run.FINAL_STATES),
    State.QUEUED: (State.LAUNCHING, *Run.FINAL_STATES),
    State.LAUNCHING: (State.LAUNCHING, State.RUNNING, *Run.FINAL_STATES),
    State.RUNNING: (State.COLLECTING, *Run.FINAL_STATES),
    State.COLLECTING: Run.FINAL_STATES,
}


# Runs are claimed and launched this long before their not_before; the wrapper waits on the host until
# then, so neither the beat tick's period nor the SSH launch delays the start. 30 s covers a fan-out: one
# worker's 8 threads launch 50 runs of one fire in ~10 s, longer while earlier runs load the machine
# (bench/fanout.py: with 10 s of lead the last of 50 started 5.3 s late).
CLAIM_LEAD = timedelta(seconds=float(os.environ.get("BENCHWEB_TICK_SECONDS", "5")) + 30)


# A finishing run claims at most this many of the runs waiting for its disk or host (the tick does the rest).
CLAIMS_ON_FINISH = 20


def _allowed(from_states: tuple[str, ...], to_state: str) -> tuple[str, ...]:
    """`from_states`, once MOVES has said each may move to `to_state`; a move it does not declare is a mistake
    in the calling code, and raises."""
    refused = [state for state in from_states if to_state not in MOVES.get(state, ())]
    if refused:
        raise ValueError(f"a run cannot move from {', '.join(refused)} to {to_state} (jobs/runs/states.py MOVES)")
    return from_states


def move(run: Run, from_states: tuple[str, ...], to_state: str, *, attempt: int | None = None, **fields: Any) -> bool:
    """Move `run` from one of `from_states`; with `attempt`, only while that launch attempt is its latest."""
    now = timezone.now()
    runs = Run.objects.filter(pk=run.pk, state__in=_allowed(from_states, to_state))
    if attempt is not None:
        runs = runs.filter(launch_attempt=attempt)
    # A new state is a new step: a wait behind the site's backlog (jobs/runs/sweeping.py) is over.
    changed = runs.update(state=to_state, heartbeat_at=now, backlog_since=None, **fields)
    if changed:
        run.reread(fields)
    return bool(changed)


def move_all(runs: QuerySet[Run], from_states: tuple[str, ...], to_state: str, **fields: Any) -> int:
    """Move every run of `runs` that is in one of `from_states`, in one UPDATE; how many moved."""
    return runs.filter(state__in=_allowed(from_states, to_state)).update(state=to_state, backlog_since=None, **fields)


def finish(
    run: Run,
    state: str,
    explanation: str,
    *,
    attempt: int | None = None,
    from_states: tuple[str, ...] = (State.PENDING, *Run.ACTIVE_STATES),
    **fields: Any,
) -> bool:
    """Move a run to a final state (from one of `from_states`: any unfinished one by default), and hand the disk
    (or exclusive host) it held to the runs waiting for it in the same transaction: a free disk does not wait
    for the beat tick, and no waiting run keeps naming a run that has ended. A run that ended otherwise than
    succeeded has no number to judge: it keeps no validity stamp (the warnings given at its launch, such as
    fresh blocks, and no steady-state stamp)."""
    if state != State.SUCCEEDED:
        fields |= {"warnings": [], "steady_state": None}
    # No savepoint of its own inside a caller's transaction (storing a run's outcome): nothing here is caught
    # and carried on from, so the caller's rollback is this one's.
    with transaction.atomic(savepoint=False):
        finished = move(
            run, from_states, state, attempt=attempt, explanation=explanation, finished_at=timezone.now(), **fields
        )
        if finished:
            if run.run_set_id is not None:
                _member_finished(run, state)
            _claim_waiting(run)
            # After the commit: a succeeded run's result and change points are stored by then.
            boundary.after_commit(evaluate.run_finished, run.pk)
    return finished


def _member_finished(run: Run, state: str) -> None:
    """A member of a set ended: when it did not succeed and its set stops on a failure, the members not started
    are skipped, saying why. After the commit the set is advanced (jobs/sets/advancing.py): its next step
    made, or its end and its result."""
    run_set = run.run_set
    if run_set is None:
        return
    if state != State.SUCCEEDED and run_set.on_failure == RunSet.OnFailure.STOP and not run_set.cancel_requested:
        where, noun = f"point {(run.set_index or 0) + 1}", "sweep"
        if run_set.kind == RunSet.Kind.GROUP_SIZES:
            where, noun = group_sizes.place(run_set.plan["sizes"], run.set_index or 0), "group-size sweep"
        move_all(run_set.members.filter(state=State.PENDING), (State.PENDING,), State.SKIPPED,
                 finished_at=timezone.now(),
                 explanation=f"skipped: {where} ended {state} and this {noun} stops on a failure")  # fmt: skip
    transaction.on_commit(lambda: steps.send_advance(run_set.pk, run.disk.host.site))
    if state != State.SUCCEEDED and run_set.run_by_fio and run_set.driven_at is None:
        # A member of a group run by fio that ended before its client started: the others are called off.
        transaction.on_commit(lambda: steps.send_drive(run_set.pk, run.disk.host.site))


def _claim_waiting(run: Run) -> None:
    """claim() the due runs waiting for `run`'s disk (its whole host when exclusive), oldest first: the first
    takes it, and each of the others gets its reason anew from claim(). The next member of the run's own set
    comes first: a set holds its disk from its first member to its last. The beat tick does the same for any
    beyond the first CLAIMS_ON_FINISH."""
    hand_on(run.disk, run.run_set_id)


def hand_on(disk: Disk, own_set: int | None = None) -> None:
    """claim() the due runs waiting for `disk` (its whole host when exclusive), the members of the set `own_set`
    first: a run has ended, or a set has (jobs/sets/advancing.py)."""
    host = disk.host
    waiting = Run.objects.filter(state=State.PENDING).exclude(not_before__gt=timezone.now() + CLAIM_LEAD)
    waiting = waiting.filter(disk__host_id=host.pk) if host.exclusive else waiting.filter(disk_id=disk.pk)
    own_first = Case(When(run_set_id=own_set, then=Value(0)), default=Value(1), output_field=IntegerField())
    order = (own_first, "set_index", "not_before", "pk") if own_set else ("not_before", "pk")
    for next_run in waiting.select_related("disk__host").order_by(*order)[:CLAIMS_ON_FINISH]:
        claim(next_run)


def _set_turn(run: Run) -> str | None:
    """Why `run`, a set's member, may not start yet, or None: an earlier point is unfinished, or the set is being
    cancelled. (A disk another set holds is Occupancy's answer.)"""
    if run.run_set_id is None:
        return None
    if RunSet.objects.filter(pk=run.run_set_id, cancel_requested=True).exists():
        return "waiting: its set is being cancelled"
    earlier = (
        Run.objects.filter(run_set_id=run.run_set_id, set_index__lt=run.set_index or 0)
        .exclude(state__in=Run.FINAL_STATES)
        .order_by("set_index")
        .first()
    )
    return f"waiting: point {(earlier.set_index or 0) + 1} of its set runs first" if earlier else None


def _hold_set(run: Run, now: Any) -> None:
    """A member was claimed: its set holds the disk from now (pending -> running) and says which point runs."""
    if run.run_set_id is None:
        return
    total = RunSet.objects.filter(pk=run.run_set_id).values_list("plan", flat=True).first() or {}
    total = total if isinstance(total, dict) else {}
    points = len(total.get("points") or [])
    # A latency-target search knows only its most runs: each step is decided when the one before it ends.
    where = f"point {(run.set_index or 0) + 1}{f' of {points}' if points else ''}"
    if total.get("max_runs"):
        where = f"step {(run.set_index or 0) + 1} of at most {total['max_runs']}"
    RunSet.objects.filter(pk=run.run_set_id, state__in=RunSet.UNFINISHED_STATES).update(
        state=RunSet.State.RUNNING, started_at=Coalesce("started_at", Value(now)), explanation=f"running {where}"
    )


def claim(run: Run, now: Any = None) -> bool:
    """pending -> queued for one run, if its disk (and an exclusive host) is free; the launch goes out on commit.
    A member of a group (or of a group-size sweep) is claimed with its group's (its size's) other members."""
    return claim_members(run, now) > 0


def claim_members(run: Run, now: Any = None) -> int:
    """claim() saying how many runs it claimed: the run alone (0 or 1), or its group's (its size's) members."""
    now = now or timezone.now()
    if run.not_before and run.not_before > now + CLAIM_LEAD:
        return 0
    if paused := paused_schedule(run):
        # Paused after this fire was made: the pause cancelled it, or it raced the pause; either way it ends here.
        move_all(Run.objects.filter(pk=run.pk), (State.PENDING,), State.CANCELLED,
                 finished_at=now, explanation=paused_explanation(paused))  # fmt: skip
        return 0
    if run.run_set is not None and run.run_set.kind == RunSet.Kind.GROUP:
        return claim_group(run.run_set.pk, now)
    if run.run_set is not None and run.run_set.kind == RunSet.Kind.GROUP_SIZES:
        return claim_group_size(run, now)
    host = run.disk.host
    place = Place.of_run(run)
    try:
        with transaction.atomic():
            if busy := Occupancy.of([place], own_set=run.run_set_id).why(place):
                _explain_if_changed(run, busy)
                return 0
            if turn := _set_turn(run):
                _explain_if_changed(run, turn)
                return 0
            changed = move_all(Run.objects.filter(pk=run.pk), (State.PENDING,), State.QUEUED,
                               queued_at=now, heartbeat_at=now, explanation=steps.QUEUED_TEXT)  # fmt: skip
            if changed:
                _hold_set(run, now)
    except IntegrityError:
        # Another run took the disk between our look and our update: the constraint said no.
        _explain_if_changed(run, "waiting: disk busy with another run")
        return 0
    if changed:
        transaction.on_commit(lambda: steps.send_launch(run, host.site))
    return changed


def group_start_lead(members: int) -> timedelta:
    """How far ahead a group's members are told to start: 5 s, and 0.2 s a member, for their launches over SSH
    (connect, preflight, upload) to be done before the instant: one worker's 8 threads launch some 5 runs a second
    (bench/fanout.py: 50 in ~10 s, within the 15 s this gives 50 members). A member launched late starts at once,
    and its late start shows in the group's spread."""
    return timedelta(seconds=5 + 0.2 * members)


def claim_group(run_set_id: int, now: Any = None, *, indexes: range | None = None, running: str = "running") -> int:
    """pending -> queued for every pending member of a group at once, only when every member's disk is free (no
    active run on it, no exclusive host busy, no other set holding it); each is told to start at the same instant
    (`not_before`: group_start_lead ahead, or the members' own start when later, a schedule's fire), which its
    host's wrapper waits for. Otherwise none is claimed, and the group and its members say which disk waits and
    why. How many members were claimed.

    With `indexes`, only the members at those places of the set, which may be running already: one size of a
    group-size sweep (claim_group_size), the set saying `running` ("running size 2 of 3") once they are claimed."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            states = (RunSet.State.PENDING,) if indexes is None else RunSet.UNFINISHED_STATES
            run_set = (
                RunSet.objects.select_for_update()
                .filter(pk=run_set_id, state__in=states, cancel_requested=False)
                .first()
            )
            if run_set is None:
                return 0
            pending = run_set.members.filter(state=State.PENDING)
            if indexes is not None:
                pending = pending.filter(set_index__gte=indexes.start, set_index__lt=indexes.stop)
            members = list(pending.select_related("disk__host").order_by("set_index"))
            if not members:
                return 0
            if waiting := _group_busy(run_set, members):
                pending.exclude(explanation=waiting).update(explanation=waiting)
                RunSet.objects.filter(pk=run_set.pk).exclude(explanation=waiting).update(explanation=waiting)
                return 0
            # A schedule's fire is claimed up to CLAIM_LEAD early: its members still start at the fire's time.
            start = max([now + group_start_lead(len(members)), *(m.not_before for m in members if m.not_before)])
            claimed = move_all(pending, (State.PENDING,), State.QUEUED, queued_at=now, heartbeat_at=now,
                               not_before=start, explanation=steps.QUEUED_TEXT)  # fmt: skip
            at = start.astimezone(UTC).strftime("%H:%M:%S UTC")
            start_at = "1 member starts" if claimed == 1 else f"{claimed} members start"
            RunSet.objects.filter(pk=run_set.pk).update(
                state=RunSet.State.RUNNING,
                started_at=Coalesce("started_at", Value(now)),
                explanation=f"{running}: {start_at} at {at}",
            )
    except IntegrityError:
        # A run took one of the disks (or a set the first one) between our look and our update.
        return 0
    if claimed:
        sites = {member.pk: member.disk.host.site for member in members}
        transaction.on_commit(lambda: steps.send_launches(sites))
    return claimed


# What a group-size sweep's member says while a smaller size runs (its members are made saying it).
SMALLER_SIZES_FIRST = "waiting: the smaller sizes of its sweep run first"


def claim_group_size(run: Run, now: Any = None) -> int:
    """A member of a group-size sweep is due: its size's members are claimed together (claim_group on them) once
    every member of the smaller sizes has ended; until then it waits, saying so. A size that
    did not all succeed has skipped the larger ones already (_member_finished). How many members were claimed."""
    assert run.run_set is not None
    sizes = run.run_set.plan["sizes"]
    step = group_sizes.step_of(sizes, run.set_index or 0)
    if run.run_set.members.filter(set_index__lt=step.first).exclude(state__in=Run.FINAL_STATES).exists():
        _explain_if_changed(run, SMALLER_SIZES_FIRST)
        return 0
    return claim_group(run.run_set.pk, now, indexes=step.indexes, running=f"running size {step.number} of {len(sizes)}")


def _group_busy(run_set: RunSet, members: list[Run]) -> str | None:
    """Why a group cannot start now, naming the first member whose disk (or exclusive host) is taken, or that
    another set holds; None when every one is free."""
    places = {member.pk: Place.of_run(member) for member in members}
    occupancy = Occupancy.of(places.values(), own_set=run_set.pk)
    for member in members:
        if busy := occupancy.why(places[member.pk]):
            where = f"member {(member.set_index or 0) + 1} (disk {member.disk.label} on host {member.disk.host.name})"
            return f"waiting: {where}: {busy.removeprefix('waiting: ')}; the members start together"
    return None


def _explain_if_changed(run: Run, explanation: str) -> None:
    Run.objects.filter(pk=run.pk, state=State.PENDING).exclude(explanation=explanation).update(explanation=explanation)


# What a person's cancel says of a run that had not started.
CANCELLED_BEFORE_START = "cancelled before it started"
# A run called off for a reason of its own says so until its stop ends it with that reason (stopping.py).
CALLING_OFF = "calling off: "


def call_off(run: Run, why: str) -> Run:
    """Stop a run before it ends by itself. Pending and queued runs end at once, saying `why`; running ones are
    stopped on the host by their own task (a launching one by its host's next observation step, once it runs).

    A queued run is one no worker holds yet: a launch moves it to *launching* with a conditional UPDATE before
    it does anything, so of that UPDATE and this one only one wins. When the cancel wins, the launch message
    still waiting in the queue finds the run cancelled and starts nothing; when the launch won, the run is
    cancelled as a launching one."""
    unheld = (State.PENDING, State.QUEUED)
    if run.state in unheld and finish(run, State.CANCELLED, why, from_states=unheld):
        return run
    run.refresh_from_db()  # a launch may have taken it meanwhile
    if run.is_active:
        # The stop (jobs/runs/stopping.py) ends it saying `why`, when `why` is not a person's plain cancel.
        saying = "cancelling" if why == CANCELLED_BEFORE_START else f"{CALLING_OFF}{why}"
        Run.objects.filter(pk=run.pk).update(cancel_requested=True, explanation=saying,
                                             heartbeat_at=timezone.now())  # fmt: skip
        if run.state == State.RUNNING:
            steps.send("stop", run)
    run.refresh_from_db()
    return run


def paused_explanation(schedule_name: str) -> str:
    """Why a scheduled run ended without starting: its schedule was paused first."""
    return (
        f"cancelled before it started: its schedule {schedule_name} was paused (a pause stops every fire not yet "
        f"started; resume the schedule for the next fires)"
    )


def paused_schedule(run: Run) -> str | None:
    """The name of the run's schedule when the run is one of its fires and the schedule is paused now."""
    if run.schedule_id is None or run.trigger != Run.Trigger.SCHEDULE:
        return None
    return Schedule.objects.filter(pk=run.schedule_id, enabled=False).values_list("name", flat=True).first()


def lost_reason(state: str) -> str:
    """Why a run is lost, from what its host shows of it (a observation step's look, a collection's read)."""
    return {
        "vanished": "lost: the run directory on the host is gone (the host rebooted or someone removed it)",
        "dead": "lost: the benchmark stopped on the host without finishing (killed, or the host rebooted)",
        "unlaunched": "lost: the run was never started on the host",
    }[state]
