"""Use cases: create, dispatch, launch, poll, collect, cancel and sweep runs; scan and approve host keys.

Views, the API, tasks and commands call these. Every step re-reads the run and moves it on only by a
conditional UPDATE (exactly one row changed), so a duplicated task, a second worker or a retried poll is
a no-op rather than a second benchmark.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Q, Value, When
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import limits, messages, remote, safety, ssh
from jobs import runners as runner
from jobs.models import Disk, Host, Profile, Run, RunResult, RunSample
from jobs.tools import detect
from jobs.tools.summary import ParseError, ParseResult

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 2.0
# A poll waits at most this long on the host for a run that is about to finish.
FINISH_WAIT_S = 5.0
OVERRUN_WAIT_S = 15.0
# A run no worker looked at for this long is picked up again by the sweep (see sweep() for the bound).
STALE_AFTER = timedelta(seconds=30)
# A launch whose answer was lost is asked again after a quarter of the time since its planned start, at least
# RELAUNCH_MIN_S and at most RELAUNCH_MAX_S: the cap stays under STALE_AFTER, so while this chain of attempts
# lives the sweep does not start a second one.
RELAUNCH_MIN_S = 5.0
RELAUNCH_MAX_S = 20.0
# timeout(1) in the wrapper sends KILL this long after TERM (`timeout -k 30`).
WATCHDOG_KILL_S = 30
# A run whose launch answer was lost and whose host stays unreachable is *lost* this long after the host's own
# watchdog has certainly stopped it (planned start + runners.watchdog_seconds + WATCHDOG_KILL_S).
LOST_LAUNCH_MARGIN = timedelta(minutes=5)
# A queued run no worker has taken for this long says so (and which queue it waits on).
UNCLAIMED_AFTER = timedelta(seconds=60)
# A finishing run claims at most this many of the runs waiting for its disk or host (the tick does the rest).
CLAIMS_ON_FINISH = 20
# Runs are claimed and launched this long before their not_before; the wrapper waits on the host until
# then, so neither the beat tick's period nor the SSH launch delays the start. 30 s covers a fan-out: one
# worker's 8 threads launch 50 runs of one fire in ~10 s, longer while earlier runs load the machine
# (bench/fanout.py: with 10 s of lead the last of 50 started 5.3 s late).
CLAIM_LEAD = timedelta(seconds=float(os.environ.get("BENCHWEB_TICK_SECONDS", "5")) + 30)
# How long a launched wrapper may take to write its pid before it counts as dead.
START_GRACE = timedelta(seconds=60)


class RunRefused(Exception):
    """A run that cannot be created; the message names the field and the fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# ----------------------------------------------------------------------------------------- creating


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
        limits_snapshot=limits_snapshot(disk, profile.block_size_bytes),
        destructive=profile.writes and disk.kind == Disk.Kind.BLOCK,
        explanation="waiting to start",
    )
    if run.destructive:
        audit.record(disk.team, user, AuditEvent.Action.DESTRUCTIVE_RUN, run, disk=str(disk),
                     device=disk.target_path, profile=profile.name, trigger=trigger)  # fmt: skip
    return run


def limits_snapshot(disk: Disk, block_size: int | None) -> dict[str, Any]:
    """The disk's limits at this block size as stored on a run, or the reason they cannot be computed."""
    try:
        return disk.limits(block_size=block_size).as_dict()
    except limits.SpecError as exc:
        return {"error": str(exc)}


def request_run(disk: Disk, profile: Profile, *, trigger: str = Run.Trigger.MANUAL, user: Any = None) -> Run:
    """Create a run and start it now if its disk is free; otherwise it waits and says why."""
    run = create_run(disk, profile, trigger=trigger, user=user)
    claim(run)
    run.refresh_from_db()
    return run


def claim(run: Run, now: Any = None) -> bool:
    """pending -> queued for one run, if its disk (and an exclusive host) is free; the launch goes out on commit."""
    now = now or timezone.now()
    if run.not_before and run.not_before > now + CLAIM_LEAD:
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
                state=Run.State.QUEUED, queued_at=now, heartbeat_at=now, explanation="queued for a worker"
            )
    except IntegrityError:
        # Another run took the disk between our look and our update: the constraint said no.
        _explain_if_changed(run, "waiting: disk busy with another run")
        return False
    if changed:
        transaction.on_commit(lambda: _send("launch", run))
    return bool(changed)


def dispatch_due(now: Any = None) -> int:
    """Claim every pending run whose time has come, oldest first, in one transaction. Called by the beat tick.

    One query reads the due runs, one the busy disks and hosts; the free ones move to *queued* with one
    UPDATE and the waiting ones get their reason with another; one fan-out message asks a worker to launch
    them all. Exclusive hosts are locked as claim() locks them, and the partial unique index on active runs
    per disk still guards: if a run was claimed elsewhere meanwhile, this tick falls back to claim() one by one.
    """
    now = now or timezone.now()
    with tick_transaction():
        due = list(
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
            )
        )
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
                state=Run.State.QUEUED, queued_at=now, heartbeat_at=now, explanation="queued for a worker"
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


def queue_for(site: str) -> str:
    """The Celery queue of a host's site: `site.<name>` (workers near those hosts listen with -Q), or the
    default queue for hosts without a site."""
    return f"site.{site}" if site else settings.CELERY_TASK_DEFAULT_QUEUE


def _send_launches(sites: dict[int, str]) -> None:
    """One message per site for many launches: a worker of that site fans it out, so the tick publishes once
    per site and every launch runs near its host."""
    by_queue: dict[str, list[int]] = {}
    for run_id, site in sites.items():
        by_queue.setdefault(queue_for(site), []).append(run_id)
    for queue, run_ids in by_queue.items():
        messages.send(messages.LAUNCH_RUNS, run_ids, queue, queue=queue)


def _send(step: str, run: Run, countdown: float = 0) -> None:
    """launch or poll one run, on its host's site queue."""
    name = {"launch": messages.LAUNCH_RUN, "poll": messages.POLL_RUN}[step]
    messages.send(name, run.pk, queue=queue_for(run.disk.host.site), countdown=countdown)


class IdentityUnavailable(Exception):
    """The host could not say what a disk's target is; the message says why and what to do."""


def record_disk_identity(disk: Disk, user: Any = None) -> dict[str, Any]:
    """Ask the host what the disk's target is (the read-only safety probe) and store it as the disk's identity,
    which every later write run is checked against. Raises IdentityUnavailable and keeps the disk's old
    identity, with the reason in identity_note, when the host cannot be asked or the target is not there."""
    try:
        with _connect(disk.host) as conn:
            probe = conn.run(safety.check_script(disk.target_path, disk.kind, writes=False), timeout=60)
    except (ssh.SSHError, remote.RemoteError) as exc:
        note_ssh_refusal(disk.host, exc, user=user, during=f"identity of disk {disk.pk}")
        raise _identity_not_recorded(disk, f"the host could not be asked: {exc}") from exc
    verdict = safety.judge(probe.stdout.decode(errors="replace"), kind=disk.kind, writes=False,
                           allow_destructive=False)  # fmt: skip
    found = verdict.facts.get("identity")
    if not found:
        raise _identity_not_recorded(disk, " ".join(verdict.reasons) or "the host named nothing that identifies it")
    _store_identity(disk, found, user, how="recorded on request")
    return found


def identify_new_target(disk: Disk, user: Any = None) -> str:
    """After a disk is created or its target path or kind changed: forget what the old target was and record
    the new one. Returns "" or why it could not be recorded; the disk stays saved either way, and the first
    run that passes the safety check records it then."""
    Disk.objects.filter(pk=disk.pk).update(identity={}, identity_recorded_at=None)
    disk.identity, disk.identity_recorded_at = {}, None
    try:
        record_disk_identity(disk, user)
    except IdentityUnavailable as exc:
        return str(exc)
    return ""


def _identity_not_recorded(disk: Disk, why: str) -> IdentityUnavailable:
    note = (
        f"identity of {disk.target_path} not recorded ({timezone.now():%Y-%m-%d %H:%M} UTC): {why}; press "
        "Record identity on the disk page when the host answers (otherwise the first run records it)"
    )[:500]
    Disk.objects.filter(pk=disk.pk).update(identity_note=note)
    disk.identity_note = note
    return IdentityUnavailable(note)


def _store_identity(disk: Disk, identity: dict[str, Any], user: Any, *, how: str, first_use: bool = False) -> bool:
    """Store what the probe found; on first use only if nothing was recorded meanwhile."""
    now = timezone.now()
    rows = Disk.objects.filter(pk=disk.pk)
    if first_use:
        rows = rows.filter(identity_recorded_at__isnull=True)
    if not rows.update(identity=identity, identity_recorded_at=now, identity_note=""):
        return False
    audit.record(disk.team, user, AuditEvent.Action.DISK_IDENTITY_RECORDED, disk, how=how,
                 device=disk.target_path, identity=safety.describe_identity(identity),
                 replaced=safety.describe_identity(disk.identity) if disk.identity else None)  # fmt: skip
    disk.identity, disk.identity_recorded_at, disk.identity_note = identity, now, ""
    return True


def _note_identity(run: Run, verdict: safety.Verdict) -> None:
    """Audit a write refused because a different disk sits at the path; trust the first run's disk that
    passes the check (and was never recorded, e.g. its host was down at registration)."""
    disk, found = run.disk, verdict.facts.get("identity")
    refused_write = not verdict.ok and disk.kind == Disk.Kind.BLOCK and verdict.facts["writes"]
    if refused_write and verdict.facts.get("identity_changes"):
        audit.record(disk.team, None, AuditEvent.Action.DISK_IDENTITY_REFUSED, disk, run=run.pk,
                     device=disk.target_path, registered=safety.describe_identity(disk.identity),
                     found=safety.describe_identity(found or {}),
                     changed=verdict.facts["identity_changes"])  # fmt: skip
    elif verdict.ok and found and disk.identity_recorded_at is None:
        _store_identity(disk, found, run.created_by, how=f"first use by run {run.pk}", first_use=True)


# ----------------------------------------------------------------------------------------- moving on


def _move(run: Run, from_states: tuple[str, ...], to_state: str, **fields: Any) -> bool:
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, state__in=from_states).update(state=to_state, heartbeat_at=now, **fields)
    if changed:
        run.refresh_from_db()
    return bool(changed)


def _finish(run: Run, state: str, explanation: str, **fields: Any) -> bool:
    """Move a run to a final state, and hand the disk (or exclusive host) it held to the runs waiting for it
    in the same transaction: a free disk does not wait for the beat tick, and no waiting run keeps naming a
    run that has ended."""
    active = (Run.State.PENDING, *Run.ACTIVE_STATES)
    with transaction.atomic():
        finished = _move(run, active, state, explanation=explanation, finished_at=timezone.now(), **fields)
        if finished:
            _claim_waiting(run)
    return finished


def _claim_waiting(run: Run) -> None:
    """claim() the due runs waiting for `run`'s disk (its whole host when exclusive), oldest first: the first
    takes it, and each of the others gets its reason anew from claim(). The beat tick does the same for any
    beyond the first CLAIMS_ON_FINISH."""
    host = run.disk.host
    waiting = Run.objects.filter(state=Run.State.PENDING).exclude(not_before__gt=timezone.now() + CLAIM_LEAD)
    waiting = waiting.filter(disk__host_id=host.pk) if host.exclusive else waiting.filter(disk_id=run.disk_id)
    for next_run in waiting.select_related("disk__host").order_by("not_before", "pk")[:CLAIMS_ON_FINISH]:
        claim(next_run)


def _connect(host: Host) -> ssh.Connection:
    if not host.enabled:
        raise ssh.SSHError("disabled", f"host {host.name} is disabled: enable it on its page to run benchmarks")
    if not host.has_pinned_key:
        raise ssh.SSHError(
            "host_key_unknown",
            f"host {host.name} has no approved host key: open the host page, scan its key, compare the "
            "fingerprint and approve it",
        )
    credential = host.credential
    if credential is None:
        raise ssh.SSHError("bad_credential", f"host {host.name} has no credential: choose one on the host page")
    secret = credential.reveal_secret()
    is_key = credential.kind == credential.Kind.PRIVATE_KEY
    target = ssh.Target(
        address=host.address,
        port=host.port,
        username=host.username,
        host_key=ssh.HostKey(host.host_key_type, host.host_key_b64, host.host_key_fingerprint),
        password=None if is_key else secret,
        private_key=secret if is_key else None,
        passphrase=credential.reveal_passphrase() or None,
    )
    return ssh.connect(target)


def launch(run_id: int) -> str:
    """Start a queued run on its host, or re-attach to it by its UUID.

    The launch command divides failures in two. Before it is sent (connecting, the preflight, the safety
    verdict, the upload) nothing can have started: the run fails as *error* and frees its disk. Once it is
    sent, the host may have started the benchmark even if its answer never came back, so the run directory
    is stored first and a lost answer does not finish the run: it stays *launching*, keeps its disk, says so,
    and this function is sent again with back-off (the sweep sends it too if that chain dies). The next
    attempt's preflight asks the host whether the run directory holds `launched/`:

    1. yes: the run is running; it is polled and collected as usual;
    2. no: the host never started it (mkdir of `launched/` is the first thing the launch command does), so
       it is launched now, as it would have been; the atomic mkdir still makes a second start impossible.
       A run cancelled meanwhile, or a scheduled one whose active window closed meanwhile, ends instead;
    3. no answer: the run keeps waiting, with the last error in its explanation, until its host's own
       watchdog has certainly stopped it (planned start + watchdog + WATCHDOG_KILL_S) plus
       LOST_LAUNCH_MARGIN; then it is *lost*, and its files, if any, stay on the host.
    """
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    # A stored run directory means an earlier attempt sent the launch command and never heard back.
    answer_lost = bool(run.remote_dir)
    if run.cancel_requested and run.state in (Run.State.QUEUED, Run.State.LAUNCHING) and not answer_lost:
        _finish(run, Run.State.CANCELLED, "cancelled before it started")
        return run.state
    # Scheduled runs are created by the beat tick without a snapshot (it keeps the tick short); they take the
    # disk's limits here, as they are when the run starts.
    snapshot = run.limits_snapshot
    if snapshot is None:
        snapshot = limits_snapshot(run.disk, run.parameters.get("block_size_bytes"))
    launching = (Run.State.QUEUED, Run.State.LAUNCHING)
    doing = f"launch answer lost; re-attaching by UUID {run.uuid}: connecting" if answer_lost else "connecting"
    if not _move(run, launching, Run.State.LAUNCHING, explanation=doing, limits_snapshot=snapshot):
        return run.state
    tool = runner.for_parameters(run.parameters)
    disk = run.disk
    try:
        with _connect(disk.host) as conn:
            pre = remote.preflight(
                conn,
                disk.host.run_base_dir,
                str(run.uuid),
                tool.check_command(disk.host),
                safety.check_script(disk.target_path, disk.kind, writes=runner.writes(run.parameters)),
            )
            run_dir = pre.run_dir
            # Already launched: a worker died after launching, or the launch's answer was lost. Re-attach;
            # never start twice.
            if not pre.launched:
                if answer_lost and (ending := _never_launched_ending(run)):
                    _finish(run, *ending)
                    _cleanup(conn, run)
                    return run.state
                # The host definitely never started it: from here a failure is again one before the launch.
                answer_lost = False
                try:
                    plan = _prepare(run, tool, pre)
                except runner.ToolUnavailable:
                    remote.cleanup(conn, run_dir, None, base=disk.host.run_base_dir, run_uuid=str(run.uuid))
                    raise
                if plan is None:
                    remote.cleanup(conn, run_dir, None, base=disk.host.run_base_dir, run_uuid=str(run.uuid))
                    return run.state
                remote.upload(conn, plan)
                if not _sending_launch(run, run_dir):
                    return run.state
                # From here the host may start the run, whatever becomes of the answer.
                answer_lost = True
                remote.launch(conn, plan)
    except (ssh.SSHError, remote.RemoteError, runner.ToolUnavailable) as exc:
        note_ssh_refusal(disk.host, exc, run=run)
        if answer_lost:
            return _launch_answer_lost(run, exc)
        _finish(run, Run.State.ERROR, f"could not start: {exc}")
        return run.state
    if _move(
        run,
        (Run.State.LAUNCHING,),
        Run.State.RUNNING,
        remote_dir=run_dir,
        # Until the host reports the real start, the planned one (the wrapper waits for not_before).
        started_at=run.started_at or _planned_start(run),
        explanation="running",
    ):
        # Only the attempt that moved the run on starts its chain of polls: a duplicate launch adds none.
        _send("poll", run, countdown=1)
    return run.state


def _planned_start(run: Run) -> datetime:
    now = timezone.now()
    return max(now, run.not_before or now)


def _sending_launch(run: Run, run_dir: str) -> bool:
    """Record the run directory (and the planned start) before the launch command goes out, so that a lost
    answer can be re-attached; False when the run moved on meanwhile (a duplicate attempt ended it), and
    then nothing is started."""
    changed = Run.objects.filter(pk=run.pk, state=Run.State.LAUNCHING).update(
        remote_dir=run_dir, started_at=run.started_at or _planned_start(run), heartbeat_at=timezone.now()
    )
    run.refresh_from_db()
    return bool(changed)


def _never_launched_ending(run: Run) -> tuple[str, str] | None:
    """How a run whose launch answer was lost ends when its host says it never started it; None: launch it now."""
    if run.cancel_requested:
        return Run.State.CANCELLED, "cancelled before it started (the host never started it)"
    window_end = run.schedule.window_end if run.schedule_id and run.schedule else None
    if window_end and window_end < timezone.now():
        return Run.State.SKIPPED, (
            "skipped: the host never started it (its launch answer was lost) and the schedule's active window "
            "has closed since"
        )
    return None


def _launch_answer_lost(run: Run, exc: Exception) -> str:
    """The launch command went out and no answer came back: keep the run and its disk, and ask again later."""
    run.refresh_from_db()
    if run.state != Run.State.LAUNCHING:
        return run.state  # a duplicate attempt (the sweep's) re-attached it meanwhile
    now = timezone.now()
    give_up = _lost_launch_deadline(run)
    if now > give_up:
        _finish(run, Run.State.LOST, (
            f"lost: the launch answer never came back and the host has not answered since; if the benchmark "
            f"ran, the host's watchdog stopped it by {give_up:%Y-%m-%d %H:%M:%S} UTC, and its files stay in "
            f"{run.remote_dir} on the host (remove them when it is back). Last error: {exc}"
        ))  # fmt: skip
        return run.state
    Run.objects.filter(pk=run.pk, state=Run.State.LAUNCHING).update(
        explanation=(
            f"launch answer lost; re-attaching by UUID {run.uuid} (the disk stays reserved until the host says "
            f"whether it started; gives up at {give_up:%Y-%m-%d %H:%M:%S} UTC). Last error: {exc}"
        ),
        heartbeat_at=now,
    )
    age = (now - (run.started_at or now)).total_seconds()
    _send("launch", run, countdown=min(RELAUNCH_MAX_S, max(RELAUNCH_MIN_S, age / 4)))
    return run.state


def _lost_launch_deadline(run: Run) -> datetime:
    started = run.started_at or run.queued_at or timezone.now()
    watchdog = runner.watchdog_seconds(run.parameters, run.disk.kind) + WATCHDOG_KILL_S
    return started + timedelta(seconds=watchdog) + LOST_LAUNCH_MARGIN


def _prepare(run: Run, tool: runner.Tool, pre: remote.Preflight) -> remote.Plan | None:
    """Judge the preflight (tool, safety, space), then the plan; None when the run was refused."""
    disk, params = run.disk, run.parameters
    version = tool.check_result(pre.tool_output, pre.tool_status, disk.host)
    verdict = safety.judge(
        pre.safety_report,
        kind=disk.kind,
        writes=runner.writes(params),
        allow_destructive=disk.allow_destructive,
        needed_bytes=runner.needed_bytes(params, disk.kind),
        recorded_identity=disk.identity,
    )
    _note_identity(run, verdict)
    if not verdict.ok:
        _finish(run, Run.State.ERROR, "refused, nothing was written: " + " ".join(verdict.reasons))
        return None
    argv, files, command_text = tool.build(params, disk.target_path, disk.kind, pre.run_dir, str(run.uuid))
    plan = remote.Plan(
        run_uuid=str(run.uuid),
        run_dir=pre.run_dir,
        lock_path=remote.lock_path_for(pre.base, disk.target_path),
        argv=argv,
        limit_s=runner.watchdog_seconds(params, disk.kind),
        files=files,
        start_at=run.not_before.timestamp() if run.not_before else None,
    )
    files["run.sh"] = remote.wrapper_script(plan).encode()
    Run.objects.filter(pk=run.pk).update(
        command=command_text, summary={"tool_version": version}, warnings=verdict.warnings
    )
    return plan


def poll(run_id: int) -> str:
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    if run.state not in (Run.State.RUNNING, Run.State.COLLECTING):
        return run.state
    tool = runner.for_parameters(run.parameters)
    try:
        with _connect(run.disk.host) as conn:
            if run.cancel_requested:
                remote.cancel(conn, run.remote_dir)
                _cleanup(conn, run)
                _finish(run, Run.State.CANCELLED, "cancelled: the benchmark was stopped on the host")
                return run.state
            status = remote.poll(conn, run.remote_dir, tool.output_file, wait_s=_finish_wait(run))
            if status.state in ("running", "starting"):
                return _still_running(run, status, tool)
            if status.state in ("vanished", "dead", "unlaunched"):
                _finish(run, Run.State.LOST, _lost_reason(status.state))
                return run.state
            if run.state == Run.State.RUNNING and not _move(
                run, (Run.State.RUNNING,), Run.State.COLLECTING, explanation="collecting results"
            ):
                return run.state
            _collect(conn, run, tool, status.exit_status)
    except (ssh.SSHError, remote.RemoteError) as exc:
        note_ssh_refusal(run.disk.host, exc, run=run)
        # The run goes on on the host whatever happened to our connection; try again later. The heartbeat
        # moves too: this chain of polls is alive, so the sweep must not start a second one.
        Run.objects.filter(pk=run.pk).update(explanation=f"{run.state}; last poll failed: {exc}",
                                             heartbeat_at=timezone.now())  # fmt: skip
        _send("poll", run, countdown=POLL_INTERVAL_S * 3)
    return run.state


def _seconds_left(run: Run) -> float:
    started = run.started_at or timezone.now()
    return runner.expected_seconds(run.parameters) - (timezone.now() - started).total_seconds()


def _finish_wait(run: Run) -> float:
    """How long a poll waits on the host for the finish: only when it is due within a few seconds."""
    return FINISH_WAIT_S if _near_end(run) else 0.0


def _near_end(run: Run) -> bool:
    # A run far past its expected end (a slow file layout) goes back to plain polling, so it cannot
    # hold a worker thread in back-to-back waits.
    return -OVERRUN_WAIT_S < _seconds_left(run) < FINISH_WAIT_S


def _still_running(run: Run, status: remote.PollResult, tool: runner.Tool) -> str:
    now = timezone.now()
    started = run.started_at or now
    if status.state == "starting" and now - started > START_GRACE:
        _finish(run, Run.State.LOST, "the run's wrapper never started on the host")
        return run.state
    if status.started_epoch:
        # The host says when the tool really started (after waiting for not_before): trust it.
        started = datetime.fromtimestamp(status.started_epoch, tz=UTC)
        Run.objects.filter(pk=run.pk).exclude(started_at=started).update(started_at=started)
        run.started_at = started
    progress = tool.progress(status.tail, run.parameters)
    expected = runner.expected_seconds(run.parameters)
    progress |= Run.clock(started, expected, now) | {"expected_s": expected}
    Run.objects.filter(pk=run.pk, state=Run.State.RUNNING).update(
        progress=progress, heartbeat_at=now, explanation="running"
    )
    # Near the end, poll again at once: that poll waits on the host for the finish itself.
    _send("poll", run, countdown=0 if _near_end(run) else POLL_INTERVAL_S)
    return run.state


def _lost_reason(state: str) -> str:
    return {
        "vanished": "lost: the run directory on the host is gone (the host rebooted or someone removed it)",
        "dead": "lost: the benchmark stopped on the host without finishing (killed, or the host rebooted)",
        "unlaunched": "lost: the run was never started on the host",
    }[state]


def _stored_summary(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    # The per-second samples are kept as RunSample rows; a second copy in the summary is dead weight.
    return summary and {key: value for key, value in summary.items() if key != "samples"}


def _collect(conn: ssh.Connection, run: Run, tool: runner.Tool, exit_status: int | None) -> None:
    outputs = {name: remote.read_file(conn, f"{run.remote_dir}/{name}") for name in tool.collect_files}
    outcome = tool.interpret(outputs, exit_status, run.parameters)
    with transaction.atomic():
        RunSample.objects.filter(run=run).delete()
        RunSample.objects.bulk_create(
            RunSample(run=run, t_s=s["t_s"], read_iops=s.get("read_iops"), write_iops=s.get("write_iops"))
            for s in (outcome.summary or {}).get("samples", [])
        )
        finished = _finish(
            run,
            outcome.state,
            outcome.explanation,
            summary=_stored_summary(outcome.summary),
            raw_output=outcome.raw_output,
            raw_stderr=outcome.raw_stderr,
            exit_status=exit_status,
            progress=run.progress | {"eta_s": 0},
        )
        if not finished:
            # Another collector finished it first (a sweep raced a slow one): keep its result, not ours.
            transaction.set_rollback(True)
            return
        RunResult.record(run)
    _cleanup(conn, run)


def _cleanup(conn: ssh.Connection, run: Run) -> None:
    glob = f"{run.disk.target_path.rstrip('/')}/{safety.test_file_name(str(run.uuid))}*"
    try:
        remote.cleanup(
            conn,
            run.remote_dir,
            glob if run.disk.kind == Disk.Kind.DIRECTORY else None,
            base=run.disk.host.run_base_dir,
            run_uuid=str(run.uuid),
        )
    except (ssh.SSHError, remote.RemoteError) as exc:
        log.warning("run %s: could not remove its files on the host: %s", run.pk, exc)


def cancel(run: Run) -> Run:
    """Pending runs stop at once; active ones are stopped on the host by the next poll."""
    if run.state == Run.State.PENDING:
        _finish(run, Run.State.CANCELLED, "cancelled before it started")
    elif run.is_active:
        Run.objects.filter(pk=run.pk).update(cancel_requested=True, explanation="cancelling")
        if run.state == Run.State.RUNNING:
            _send("poll", run)
    run.refresh_from_db()
    return run


def sweep(now: Any = None) -> int:
    """Pick up runs no worker has looked at lately (a worker died, a message was lost, a chain of polls or of
    re-attaching launches ended without finishing its run).

    A live chain writes the run's heartbeat at every attempt and sends the next one within RELAUNCH_MAX_S
    (< STALE_AFTER), so a heartbeat older than STALE_AFTER means no chain is left (or one attempt hangs on a
    frozen session: a second chain is then harmless, as every step is a conditional update and a start is
    guarded by the host's atomic mkdir). The beat tick calls this every BENCHWEB_TICK_SECONDS, so a dead chain
    is picked up within STALE_AFTER + one tick period of its last heartbeat (35 s by default), plus the time
    its message waits for a worker. Queued and launching runs get a launch (which re-attaches by UUID), running
    and collecting ones a poll; a run with no heartbeat at all is stale at once. Only the sweep that moved a
    run's heartbeat on sends it, so two beat processes do not start two chains.
    """
    now = now or timezone.now()
    stale = Run.objects.filter(
        Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True), state__in=Run.ACTIVE_STATES
    )
    count = 0
    for run in stale.select_related("disk__host").only("pk", "state", "heartbeat_at", "queued_at", "disk__host__site"):
        fields: dict[str, Any] = {"heartbeat_at": now}
        if run.state == Run.State.QUEUED and run.queued_at and now - run.queued_at > UNCLAIMED_AFTER:
            # No worker took the launch: most often nobody listens on this site's queue.
            queue = queue_for(run.disk.host.site)
            fields["explanation"] = (
                f"queued on {queue} for {(now - run.queued_at).total_seconds():.0f} s and no worker has taken it: "
                f"is a worker running with -Q {queue}? (celery -A benchweb worker -Q {queue})"
            )
        if not Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(**fields):
            continue  # another sweep, or the run's own chain, moved it on meanwhile
        _send("launch" if run.state in (Run.State.QUEUED, Run.State.LAUNCHING) else "poll", run)
        count += 1
    return count


# ----------------------------------------------------------------------------------------- host keys


def scan_host_key(host: Host, user: Any = None) -> ssh.HostKey:
    key = ssh.scan_host_key(host.address, host.port)
    if host.has_pinned_key and key.key_b64 != host.host_key_b64:
        audit.record(host.team, user, AuditEvent.Action.HOST_KEY_CHANGED, host, pinned=host.host_key_fingerprint,
                     presented=key.fingerprint, presented_type=key.key_type)  # fmt: skip
    Host.objects.filter(pk=host.pk).update(
        scanned_key_type=key.key_type,
        scanned_key_b64=key.key_b64,
        scanned_key_fingerprint=key.fingerprint,
        scanned_at=timezone.now(),
    )
    host.refresh_from_db()
    return key


def approve_host_key(host: Host, user: Any, fingerprint: str) -> None:
    """Pin the scanned key, but only the one whose fingerprint the person saw."""
    if not host.scanned_key_b64 or host.scanned_key_fingerprint != fingerprint:
        raise RunRefused("fingerprint", "The scanned key changed since you saw it: scan again and compare.")
    Host.objects.filter(pk=host.pk).update(
        host_key_type=host.scanned_key_type,
        host_key_b64=host.scanned_key_b64,
        host_key_fingerprint=host.scanned_key_fingerprint,
        host_key_approved_at=timezone.now(),
        host_key_approved_by=user if getattr(user, "is_authenticated", False) else None,
    )
    audit.record(host.team, user, AuditEvent.Action.HOST_KEY_APPROVED, host, fingerprint=fingerprint,
                 key_type=host.scanned_key_type, replaced=host.host_key_fingerprint or None)  # fmt: skip
    host.refresh_from_db()


# ----------------------------------------------------------------------------------------- imports


def parse_import(text: str, tool: str = "auto") -> ParseResult:
    """Parse pasted or uploaded tool output; ParseError says why it cannot be read."""
    fmt = detect.detect_format(text)
    if tool == "fio" and not fmt.startswith("fio"):
        raise ParseError(f"this looks like {fmt} output, not fio; use --tool auto or ndisk64")
    if tool == "ndisk64" and fmt != "ndisk64":
        raise ParseError(f"this looks like {fmt} output, not ndisk64; use --tool auto or fio")
    return detect.parse_output(text, fmt)


EARLIEST_IMPORT = datetime(1970, 1, 1, tzinfo=UTC)


def import_result(disk: Disk, text: str, *, name: str, at: Any = None, user: Any = None, tool: str = "auto") -> Run:
    """Store existing tool output as a finished run of the disk (trigger 'import'), with its raw text."""
    finished = at or timezone.now()
    if finished < EARLIEST_IMPORT:
        # The charts count in ms since 1970, and a date near year 1 minus the runtime is no date at all.
        raise RunRefused("finished_at", f"{finished.isoformat()} is before 1970: give when the run finished.")
    parsed = parse_import(text, tool)
    summary = parsed.summary_with_bins()
    runtime = summary.get("runtime_s")
    block_size = summary.get("block_size_bytes")
    try:
        snapshot = disk.limits(block_size=block_size).as_dict()
    except limits.SpecError as exc:
        snapshot = {"error": str(exc)}
    errors = "; ".join(f"job {e['job']} error {e['errno']}" for e in parsed.job_errors)
    with transaction.atomic():
        run = Run.objects.create(
            disk=disk,
            profile_name=f"import: {name}"[:100],
            parameters={"tool": summary["tool"], "format": parsed.format, "source": name, "settings": parsed.settings},
            trigger=Run.Trigger.IMPORT,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            state=Run.State.FAILED if errors else Run.State.SUCCEEDED,
            explanation=f"the imported output reports an error: {errors}" if errors else f"imported from {name}",
            started_at=finished - timedelta(seconds=runtime) if runtime else finished,
            finished_at=finished,
            raw_output=text,
            summary=_stored_summary(summary),
            limits_snapshot=snapshot,
        )
        RunSample.objects.bulk_create(
            RunSample(run=run, t_s=s["t_s"], read_iops=s.get("read_iops"), write_iops=s.get("write_iops"))
            for s in summary.get("samples", [])
        )
        RunResult.record(run)
    return run


# ----------------------------------------------------------------------------------------- refusals

# A run whose polls meet a changed key retries every few seconds: the audit log gets one event per host,
# presented key and run (or connection test) in this window, not one per attempt.
REFUSAL_AUDIT_EVERY = timedelta(hours=1)


def note_ssh_refusal(
    host: Host, exc: Exception, run: Run | None = None, user: Any = None, during: str = "connection test"
) -> AuditEvent | None:
    """Record a run, connection test or identity probe refused because the host presented another key than the
    approved one."""
    if not isinstance(exc, ssh.SSHError) or exc.reason != "host_key_changed":
        return None
    presented = exc.presented
    during = f"run {run.pk}" if run else during
    fingerprint = presented.fingerprint if presented else ""
    recent = AuditEvent.objects.filter(
        action=AuditEvent.Action.HOST_KEY_REFUSED,
        object_type="host",
        object_id=str(host.pk),
        details__presented=fingerprint,
        details__during=during,
        created_at__gte=timezone.now() - REFUSAL_AUDIT_EVERY,
    )
    if recent.exists():
        return None
    # A run's refusal is put to whoever started it (none for a scheduled run); a test's to whoever tested.
    actor = user or (run.created_by if run else None)
    return audit.record(
        host.team, actor, AuditEvent.Action.HOST_KEY_REFUSED, host,
        address=f"{host.address}:{host.port}", during=during,
        pinned=exc.pinned.fingerprint if exc.pinned else host.host_key_fingerprint,
        presented=fingerprint, presented_type=presented.key_type if presented else "",
    )  # fmt: skip
