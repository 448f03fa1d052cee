"""A run's life on its host: launch (detached), poll, collect, clean up, cancel, and the sweep that finds runs
nobody is watching (docs/architecture.md has the state machine)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import remote, safety, ssh
from jobs import runners as runner
from jobs.disks import identity
from jobs.hosts import connecting
from jobs.models import Disk, Run, RunResult, RunSample
from jobs.runs import queueing

log = logging.getLogger(__name__)


POLL_INTERVAL_S = 2.0


# A run due to end within NEAR_END_S is polled back to back, each poll waiting on the host for the finish
# for at most FINISH_WAIT_S: the finish is noticed within 0.1 s, and the live figures, read when a wait ends,
# still move every second or two to the end (one 5 s wait used to hold them for the last half of a 10 s run).
NEAR_END_S = 5.0


FINISH_WAIT_S = 1.0


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


# A finishing run claims at most this many of the runs waiting for its disk or host (the tick does the rest).
CLAIMS_ON_FINISH = 20


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
        identity.store_identity(disk, found, run.created_by, how=f"first use by run {run.pk}", first_use=True)


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
    waiting = Run.objects.filter(state=Run.State.PENDING).exclude(not_before__gt=timezone.now() + queueing.CLAIM_LEAD)
    waiting = waiting.filter(disk__host_id=host.pk) if host.exclusive else waiting.filter(disk_id=run.disk_id)
    for next_run in waiting.select_related("disk__host").order_by("not_before", "pk")[:CLAIMS_ON_FINISH]:
        queueing.claim(next_run)


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
    if run.state in (Run.State.QUEUED, Run.State.LAUNCHING) and not answer_lost:
        # A scheduled run re-checks its schedule here: one paused since the claim starts nothing.
        paused = queueing.paused_schedule(run)
        if run.cancel_requested or paused:
            why = queueing.paused_explanation(paused) if paused else "cancelled before it started"
            _finish(run, Run.State.CANCELLED, why)
            return run.state
    # Scheduled runs are created by the beat tick without a snapshot (it keeps the tick short); they take the
    # disk's limits here, as they are when the run starts.
    snapshot = run.limits_snapshot
    if snapshot is None:
        snapshot = run.disk.limits_snapshot(run.parameters.get("block_size_bytes"))
    launching = (Run.State.QUEUED, Run.State.LAUNCHING)
    doing = f"launch answer lost; re-attaching by UUID {run.uuid}: connecting" if answer_lost else "connecting"
    if not _move(run, launching, Run.State.LAUNCHING, explanation=doing, limits_snapshot=snapshot):
        return run.state
    tool = runner.for_parameters(run.parameters)
    disk = run.disk
    try:
        with connecting.connect(disk.host) as conn:
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
        connecting.note_ssh_refusal(disk.host, exc, run=run)
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
        queueing.send("poll", run, countdown=1)
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
    queueing.send("launch", run, countdown=min(RELAUNCH_MAX_S, max(RELAUNCH_MIN_S, age / 4)))
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
        with connecting.connect(run.disk.host) as conn:
            if run.cancel_requested:
                remote.cancel(conn, run.remote_dir)
                _cleanup(conn, run)
                _finish(run, Run.State.CANCELLED, _stopped_on_host(run))
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
            _collect(conn, run, tool, status)
    except (ssh.SSHError, remote.RemoteError) as exc:
        connecting.note_ssh_refusal(run.disk.host, exc, run=run)
        # The run goes on on the host whatever happened to our connection; try again later. The heartbeat
        # moves too: this chain of polls is alive, so the sweep must not start a second one.
        Run.objects.filter(pk=run.pk).update(explanation=f"{run.state}; last poll failed: {exc}",
                                             heartbeat_at=timezone.now())  # fmt: skip
        queueing.send("poll", run, countdown=POLL_INTERVAL_S * 3)
    return run.state


def _stopped_on_host(run: Run) -> str:
    """A cancelled run stopped before its start (the wrapper was still waiting for not_before) says that
    nothing ran, and why: a paused schedule, or a person's cancel."""
    if not (run.not_before and run.not_before > timezone.now()):
        return "cancelled: the benchmark was stopped on the host"
    paused = queueing.paused_schedule(run)
    why = queueing.paused_explanation(paused) if paused else "cancelled before it started"
    return f"{why}; the wrapper waiting on the host for its start was stopped, nothing ran"


def _seconds_left(run: Run) -> float:
    started = run.started_at or timezone.now()
    return runner.expected_seconds(run.parameters) - (timezone.now() - started).total_seconds()


def _finish_wait(run: Run) -> float:
    """How long a poll waits on the host for the finish: only when it is due within a few seconds."""
    return FINISH_WAIT_S if _near_end(run) else 0.0


def _near_end(run: Run) -> bool:
    # A run far past its expected end (a slow file layout) goes back to plain polling, so it cannot
    # hold a worker thread in back-to-back waits.
    return -OVERRUN_WAIT_S < _seconds_left(run) < NEAR_END_S


def _note_started(run: Run, status: remote.PollResult) -> None:
    """The host says when the tool really started (after waiting for not_before): trust it."""
    if status.started_epoch:
        started = datetime.fromtimestamp(status.started_epoch, tz=UTC)
        Run.objects.filter(pk=run.pk).exclude(started_at=started).update(started_at=started)
        run.started_at = started


def _still_running(run: Run, status: remote.PollResult, tool: runner.Tool) -> str:
    now = timezone.now()
    if status.state == "starting" and now - (run.started_at or now) > queueing.START_GRACE:
        _finish(run, Run.State.LOST, "the run's wrapper never started on the host")
        return run.state
    _note_started(run, status)
    started = run.started_at or now
    progress = tool.progress(status.tail, run.parameters)
    expected = runner.expected_seconds(run.parameters)
    progress |= Run.clock(started, expected, now) | {"expected_s": expected}
    Run.objects.filter(pk=run.pk, state=Run.State.RUNNING).update(
        progress=progress, heartbeat_at=now, explanation="running"
    )
    queueing.send("poll", run, countdown=_next_poll_in(run))
    return run.state


def _next_poll_in(run: Run) -> float:
    """Near the end, at once: that poll waits on the host for the finish itself. Before, every POLL_INTERVAL_S,
    the last of those sooner so that it lands as the end comes near, not a whole interval into the near end."""
    if _near_end(run):
        return 0.0
    left = _seconds_left(run)
    return min(POLL_INTERVAL_S, left - NEAR_END_S) if left > NEAR_END_S else POLL_INTERVAL_S


def _lost_reason(state: str) -> str:
    return {
        "vanished": "lost: the run directory on the host is gone (the host rebooted or someone removed it)",
        "dead": "lost: the benchmark stopped on the host without finishing (killed, or the host rebooted)",
        "unlaunched": "lost: the run was never started on the host",
    }[state]


def stored_summary(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    # The per-second samples are kept as RunSample rows; a second copy in the summary is dead weight.
    return summary and {key: value for key, value in summary.items() if key != "samples"}


def _final_clock(run: Run, status: remote.PollResult) -> dict[str, Any]:
    """elapsed_s of a finished run: from the host's `started` to its `finished` (both its own clock), not the
    last poll's figure, which is up to a poll interval old; elapsed_from says which clock (a wrapper older than
    the `finished` file: until the collector saw the finish)."""
    _note_started(run, status)
    started = run.started_at or timezone.now()
    if status.finished_epoch and status.started_epoch:
        ended, source = datetime.fromtimestamp(max(status.finished_epoch, status.started_epoch), tz=UTC), "host"
    else:
        ended, source = timezone.now(), "collector"
    return Run.clock(started, 0, ended) | {"elapsed_from": source}


def _collect(conn: ssh.Connection, run: Run, tool: runner.Tool, status: remote.PollResult) -> None:
    exit_status = status.exit_status
    clock = _final_clock(run, status)
    outputs = {name: remote.read_file(conn, f"{run.remote_dir}/{name}") for name in tool.collect_files}
    outcome = tool.interpret(outputs, exit_status, run.parameters)
    with transaction.atomic():
        RunSample.store(run, (outcome.summary or {}).get("samples", []))
        finished = _finish(
            run,
            outcome.state,
            outcome.explanation,
            summary=stored_summary(outcome.summary),
            raw_output=outcome.raw_output,
            raw_stderr=outcome.raw_stderr,
            exit_status=exit_status,
            progress=run.progress | clock,
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
            queueing.send("poll", run)
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
        if run.state == Run.State.QUEUED and run.queued_at and now - run.queued_at > queueing.UNCLAIMED_AFTER:
            # No worker took the launch: most often nobody listens on this site's queue.
            queue = queueing.queue_for(run.disk.host.site)
            fields["explanation"] = (
                f"queued on {queue} for {(now - run.queued_at).total_seconds():.0f} s and no worker has taken it: "
                f"is a worker running with -Q {queue}? (celery -A benchweb worker -Q {queue})"
            )
        if not Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(**fields):
            continue  # another sweep, or the run's own chain, moved it on meanwhile
        queueing.send("launch" if run.state in (Run.State.QUEUED, Run.State.LAUNCHING) else "poll", run)
        count += 1
    return count
