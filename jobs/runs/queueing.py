"""Runs before they start: create (refused with the reason), claim a disk, send the launch by name.

The beat tick (jobs/schedules/dispatcher.py) and the run-now buttons and API come here; the database row is
the truth, the broker message only a nudge (docs/decisions/0002-database-is-the-truth.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Q, Value, When
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import errors, messages
from jobs.models import Disk, Host, Profile, Run, Schedule
from jobs.runs import sites
from jobs.runs.sites import queue_for

# Runs are claimed and launched this long before their not_before; the wrapper waits on the host until
# then, so neither the beat tick's period nor the SSH launch delays the start. 30 s covers a fan-out: one
# worker's 8 threads launch 50 runs of one fire in ~10 s, longer while earlier runs load the machine
# (bench/fanout.py: with 10 s of lead the last of 50 started 5.3 s late).
CLAIM_LEAD = timedelta(seconds=float(os.environ.get("BENCHWEB_TICK_SECONDS", "5")) + 30)


# How long a launched wrapper may take to write its pid before it counts as dead.
START_GRACE = timedelta(seconds=60)


# A queued run no worker has taken for this long says so (and which queue it waits on).
UNCLAIMED_AFTER = timedelta(seconds=60)


QUEUED_TEXT = "queued for a worker"


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
) -> Run:
    if profile.team_id not in (None, disk.team_id):
        raise RunRefused("profile", "That profile belongs to another team; choose one of yours or a built-in one.")
    if refusal := refusal_text(disk, profile):
        raise RunRefused("profile", refusal)
    run = Run.objects.create(
        disk=disk,
        profile=profile,
        profile_name=profile.name,
        parameters=profile.parameters(),
        trigger=trigger,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        not_before=not_before,
        schedule=schedule,
        fire_time=fire_time,
        limits_snapshot=disk.limits_snapshot(profile.block_size_bytes),
        destructive=disk.destructive_for(profile),
        explanation="waiting to start",
    )
    if run.destructive:
        audit.record(disk.team, user, AuditEvent.Action.DESTRUCTIVE_RUN, run, disk=str(disk),
                     device=disk.target_path, profile=profile.name, trigger=trigger)  # fmt: skip
    return run


def request_run(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> Run:
    """Create a run and start it now if its disk is free; otherwise it waits and says why."""
    run = create_run(disk, profile, trigger=trigger, user=user)
    claim(run)
    run.refresh_from_db()
    return run


def refusal_text(disk: Disk, profile: Profile) -> str | None:
    """Why profile cannot run on disk (Disk.refusal_for), as one sentence naming both; None when it can."""
    refusal = disk.refusal_for(profile)
    return f"{profile.name} cannot run on disk {disk.label}: {refusal.message}" if refusal else None


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


def claim(run: Run, now: Any = None) -> bool:
    """pending -> queued for one run, if its disk (and an exclusive host) is free; the launch goes out on commit."""
    now = now or timezone.now()
    if run.not_before and run.not_before > now + CLAIM_LEAD:
        return False
    if paused := paused_schedule(run):
        # Paused after this fire was made: the pause cancelled it, or it raced the pause; either way it ends here.
        Run.objects.filter(pk=run.pk, state=Run.State.PENDING).update(
            state=Run.State.CANCELLED, finished_at=now, explanation=paused_explanation(paused)
        )
        return False
    host = run.disk.host
    try:
        with transaction.atomic():
            if host.exclusive:
                # Lock the host row so two disks of one exclusive host are never claimed at once.
                Host.objects.select_for_update().filter(pk=host.pk).first()
                other = Run.objects.filter(disk__host_id=host.pk, state__in=Run.ACTIVE_STATES).exclude(pk=run.pk)
                if first := other.first():
                    _explain_if_changed(run, f"waiting: host {host.name} runs one benchmark at a time; "
                                             f"busy with run {first.pk}")  # fmt: skip
                    return False
            busy = (
                Run.objects.filter(disk_id=run.disk_id, state__in=Run.ACTIVE_STATES)
                .exclude(pk=run.pk)
                .order_by()
                .first()
            )
            if busy:
                _explain_if_changed(run, f"waiting: disk busy with run {busy.pk}")
                return False
            changed = Run.objects.filter(pk=run.pk, state=Run.State.PENDING).update(
                state=Run.State.QUEUED, queued_at=now, heartbeat_at=now, explanation=QUEUED_TEXT
            )
    except IntegrityError:
        # Another run took the disk between our look and our update: the constraint said no.
        _explain_if_changed(run, "waiting: disk busy with another run")
        return False
    if changed:
        transaction.on_commit(lambda: _send_launch(run, host.site))
    return bool(changed)


def _send_launch(run: Run, site: str) -> None:
    send("launch", run)
    _say_if_unserved(site, [run.pk])


def dispatch_due(now: Any = None) -> int:
    """Claim every pending run whose time has come, oldest first, in one transaction. Called by the beat tick.

    One query reads the due runs, one the busy disks and hosts; the free ones move to *queued* with one
    UPDATE and the waiting ones get their reason with another; one fan-out message asks a worker to launch
    them all. Exclusive hosts are locked as claim() locks them, and the partial unique index on active runs
    per disk still guards: if a run was claimed elsewhere meanwhile, this tick falls back to claim() one by one.
    """
    now = now or timezone.now()
    with tick_transaction():
        rows = list(
            Run.objects.filter(state=Run.State.PENDING)
            .exclude(not_before__gt=now + CLAIM_LEAD)
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
        exclusive = {host_id for _, _, _, host_id, _, is_exclusive, _ in due if is_exclusive}
        if exclusive:
            list(Host.objects.select_for_update().filter(pk__in=exclusive).order_by("pk").values_list("pk"))
        busy_disks: dict[int, int] = {}
        busy_hosts: dict[int, int] = {}
        active = Run.objects.filter(state__in=Run.ACTIVE_STATES).order_by()
        for run_pk, disk_id, host_id in active.values_list("pk", "disk_id", "disk__host_id"):
            busy_disks[disk_id] = run_pk
            if host_id in exclusive:
                busy_hosts[host_id] = run_pk
        free: dict[int, str] = {}  # run -> its host's site
        reasons: dict[int, str] = {}
        for run_pk, disk_id, explanation, host_id, host_name, is_exclusive, site in due:
            if disk_id in busy_disks:
                reason = f"waiting: disk busy with run {busy_disks[disk_id]}"
            elif is_exclusive and host_id in busy_hosts:
                reason = f"waiting: host {host_name} runs one benchmark at a time; busy with run {busy_hosts[host_id]}"
            else:
                free[run_pk] = site
                busy_disks[disk_id] = run_pk
                if is_exclusive:
                    busy_hosts[host_id] = run_pk
                continue
            if explanation != reason:
                reasons[run_pk] = reason
        if reasons:
            Run.objects.filter(pk__in=reasons, state=Run.State.PENDING).update(
                explanation=Case(*(When(pk=pk, then=Value(text)) for pk, text in reasons.items()))
            )
        return _claim_together(free, now)


def _drop_paused(due: list[Any], now: Any) -> list[Any]:
    """The due rows without their last three fields (trigger, schedule enabled, schedule name); the fires of a
    schedule paused since they were made are cancelled instead. The pause cancels them itself
    (dispatcher.stop_unstarted): this re-check catches a fire that raced it."""
    paused = {row[0]: row[9] for row in due if row[7] == Run.Trigger.SCHEDULE and row[8] is False}
    if paused:
        Run.objects.filter(pk__in=paused, state=Run.State.PENDING).update(
            state=Run.State.CANCELLED,
            finished_at=now,
            explanation=Case(*(When(pk=pk, then=Value(paused_explanation(name))) for pk, name in paused.items())),
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
            claimed = Run.objects.filter(pk__in=ids, state=Run.State.PENDING).update(
                state=Run.State.QUEUED, queued_at=now, heartbeat_at=now, explanation=QUEUED_TEXT
            )
    except IntegrityError:
        # A run on one of these disks was claimed elsewhere since we looked: claim them one at a time.
        runs = Run.objects.filter(pk__in=ids).select_related("disk__host").order_by("not_before", "pk")
        return sum(claim(run, now) for run in runs)
    # A run cancelled in between stays cancelled: launch() only moves queued runs on.
    transaction.on_commit(lambda: _send_launches(sites))
    return claimed


def _explain_if_changed(run: Run, explanation: str) -> None:
    Run.objects.filter(pk=run.pk, state=Run.State.PENDING).exclude(explanation=explanation).update(
        explanation=explanation
    )


def _send_launches(by_run: dict[int, str]) -> None:
    """One message per site for many launches: a worker of that site fans it out, so the tick publishes once
    per site and every launch runs near its host."""
    by_site: dict[str, list[int]] = {}
    for run_id, site in by_run.items():
        by_site.setdefault(site, []).append(run_id)
    for site, run_ids in by_site.items():
        queue = queue_for(site)
        messages.send(messages.LAUNCH_RUNS, run_ids, queue, queue=queue)
        _say_if_unserved(site, run_ids)


def _say_if_unserved(site: str, run_ids: list[int]) -> None:
    """Runs just queued for a site that no running worker serves say so at once, rather than "queued for a
    worker" (the message stays in the site's queue: a worker started there takes it)."""
    if sites.unserved(site):
        Run.objects.filter(pk__in=run_ids, state=Run.State.QUEUED, explanation=QUEUED_TEXT).update(
            explanation=sites.waiting_text(site)
        )


def send(step: str, run: Run, countdown: float = 0) -> None:
    """launch, poll (look after: jobs/runs/lifecycle.py `poll`), collect or stop one run, on its host's site
    queue."""
    name = {"launch": messages.LAUNCH_RUN, "poll": messages.POLL_RUN, "collect": messages.COLLECT_RUN,
            "stop": messages.STOP_RUN}[step]  # fmt: skip
    messages.send(name, run.pk, queue=queue_for(run.disk.host.site), countdown=countdown)


# A host whose chain of observation steps has not stepped for this long has none left (a step comes every
# second or so, at most every 6 s while its host does not answer): the next launch or the sweep starts one.
OBSERVER_STALE_AFTER = timedelta(seconds=20)


def observe(host: Host, *, now: Any = None) -> bool:
    """Make sure one chain of observation steps looks after `host`'s running runs (jobs/runs/observing.py):
    start one unless a live one is there. The new chain's token replaces the old one's in one conditional
    UPDATE, so of two callers at once only one starts a chain, and a chain that was only slow ends at its next
    step. True when this call started it."""
    now = now or timezone.now()
    token = os.urandom(16).hex()
    started = (
        Host.objects.filter(pk=host.pk)
        .filter(Q(observer_token="") | Q(observed_at__isnull=True) | Q(observed_at__lt=now - OBSERVER_STALE_AFTER))
        .update(observer_token=token, observed_at=now)
    )
    if started:
        transaction.on_commit(lambda: messages.send(messages.OBSERVE_HOST, host.pk, token, queue=queue_for(host.site)))
    return bool(started)
