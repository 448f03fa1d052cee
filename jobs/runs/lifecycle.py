"""A run's life on its host: launch (detached), poll, collect, clean up, cancel, and the sweep that finds runs
nobody is watching (docs/architecture.md has the state machine). Watching a running run is
jobs/runs/observing.py's."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import environment, remote, safety, ssh
from jobs import runners as runner
from jobs.alerts import evaluate as alerts
from jobs.disks import identity, precondition
from jobs.hosts import connecting
from jobs.models import Disk, Host, Run, RunResult, RunSample
from jobs.runs import queueing, sites
from jobs.safety import guard

log = logging.getLogger(__name__)


# A collection or stop that could not reach the host is tried again this much later.
RETRY_S = 6.0


# A run due to end within NEAR_END_S is looked at more often by its host's observation steps
# (jobs/runs/observing.py), so that its end is seen within a fraction of a second.
NEAR_END_S = 3.0


OVERRUN_WAIT_S = 15.0


# A run no worker looked at for this long is picked up again by the sweep (see sweep() for the bound).
STALE_AFTER = timedelta(seconds=30)


# A launch whose answer was lost is asked again after a quarter of the time since its planned start, at least
# RELAUNCH_MIN_S and at most RELAUNCH_MAX_S: the cap stays under STALE_AFTER, so while this chain of attempts
# lives the sweep does not start a second one.
RELAUNCH_MIN_S = 5.0


RELAUNCH_MAX_S = 20.0


# timeout(1) in the wrapper sends KILL this long after TERM (`timeout -k 30`).
WATCHDOG_KILL_S = runner.WATCHDOG_KILL_S


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


def move(run: Run, from_states: tuple[str, ...], to_state: str, *, attempt: int | None = None, **fields: Any) -> bool:
    """Move `run` from one of `from_states`; with `attempt`, only while that launch attempt is its latest."""
    now = timezone.now()
    runs = Run.objects.filter(pk=run.pk, state__in=from_states)
    if attempt is not None:
        runs = runs.filter(launch_attempt=attempt)
    changed = runs.update(state=to_state, heartbeat_at=now, **fields)
    if changed:
        run.refresh_from_db()
    return bool(changed)


def finish(
    run: Run,
    state: str,
    explanation: str,
    *,
    attempt: int | None = None,
    from_states: tuple[str, ...] = (Run.State.PENDING, *Run.ACTIVE_STATES),
    **fields: Any,
) -> bool:
    """Move a run to a final state (from one of `from_states`: any unfinished one by default), and hand the disk
    (or exclusive host) it held to the runs waiting for it in the same transaction: a free disk does not wait
    for the beat tick, and no waiting run keeps naming a run that has ended. A run that ended otherwise than
    succeeded has no number to judge: it keeps no validity stamp (the warnings given at its launch, such as
    fresh blocks, and no steady-state stamp)."""
    if state != Run.State.SUCCEEDED:
        fields |= {"warnings": [], "steady_state": None}
    with transaction.atomic():
        finished = move(
            run, from_states, state, attempt=attempt, explanation=explanation, finished_at=timezone.now(), **fields
        )
        if finished:
            _claim_waiting(run)
            # After the commit: a succeeded run's result and change points are stored by then.
            alerts.after_commit(alerts.run_finished, run.pk)
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

    Two attempts may overlap (the sweep re-sends a launch that waited in the queue longer than STALE_AFTER):
    each counts itself in `launch_attempt`, and only the latest sends the launch command or ends the run, so an
    older one that fails, or is refused, says nothing about a run the latest may have started.
    """
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    # A stored run directory means an earlier attempt sent the launch command and never heard back.
    answer_lost = bool(run.remote_dir)
    # Scheduled runs are created by the beat tick without a snapshot (it keeps the tick short); they take the
    # disk's limits here, as they are when the run starts.
    snapshot = run.limits_snapshot
    if snapshot is None:
        snapshot = run.disk.limits_snapshot(run.parameters.get("block_size_bytes"))
    launching = (Run.State.QUEUED, Run.State.LAUNCHING)
    doing = f"launch answer lost; re-attaching by UUID {run.uuid}: connecting" if answer_lost else "connecting"
    if not move(run, launching, Run.State.LAUNCHING, explanation=doing, limits_snapshot=snapshot,
                launch_attempt=F("launch_attempt") + 1):  # fmt: skip
        return run.state
    attempt = run.launch_attempt
    # An attempt that overlapped this one may have sent the launch command since this one began.
    answer_lost = answer_lost or bool(run.remote_dir)
    if not answer_lost:
        # A scheduled run re-checks its schedule here: one paused since the claim starts nothing.
        paused = queueing.paused_schedule(run)
        if run.cancel_requested or paused:
            why = queueing.paused_explanation(paused) if paused else "cancelled before it started"
            finish(run, Run.State.CANCELLED, why, attempt=attempt)
            return _state_of(run)
    tool = runner.for_parameters(run.parameters)
    disk = run.disk
    try:
        with connecting.session(disk.host) as conn:
            pre = remote.preflight(
                conn,
                disk.host.run_base_dir,
                str(run.uuid),
                tool.check_command(disk.host),
                safety.check_script(disk.target_path, disk.kind, writes=runner.writes(run.parameters)),
                environment.probe_script(disk.target_path, disk.kind, cloud_metadata=disk.host.cloud_metadata),
            )
            run_dir = pre.run_dir
            # Already launched: a worker died after launching, or the launch's answer was lost. Re-attach;
            # never start twice.
            launched = pre.launched
            if not launched and answer_lost and (ending := _never_launched_ending(run)):
                # An overlapping attempt's launch command may land after this preflight: take the launch first,
                # so that the run ends with nothing started and nothing able to start.
                if remote.claim_launch(conn, run_dir):
                    finish(run, *ending)
                    _cleanup(conn, run)
                    return _state_of(run)
                launched = True  # it landed: re-attach (a cancelled run is then stopped on the host)
            if not launched:
                # The host definitely never started it: from here a failure is again one before the launch.
                answer_lost = False
                try:
                    plan = _prepare(run, tool, pre, attempt)
                except runner.ToolUnavailable as exc:
                    finish(run, Run.State.ERROR, f"could not start: {exc}", attempt=attempt)
                    plan = None
                if plan is None:
                    # Refused (or no tool) and ended by this attempt: nothing was launched, nor will be.
                    if run.is_final:
                        remote.cleanup(conn, run_dir, None, base=disk.host.run_base_dir, run_uuid=str(run.uuid))
                    return _state_of(run)
                remote.upload(conn, plan)
                if not _sending_launch(run, run_dir, attempt):
                    return run.state
                # From here the host may start the run, whatever becomes of the answer.
                answer_lost = True
                remote.launch(conn, plan)
    except (ssh.SSHError, remote.RemoteError) as exc:
        connecting.note_ssh_refusal(disk.host, exc, run=run)
        if answer_lost:
            return _launch_answer_lost(run, exc, attempt)
        finish(run, Run.State.ERROR, f"could not start: {exc}", attempt=attempt)
        return _state_of(run)
    if move(
        run,
        (Run.State.LAUNCHING,),
        Run.State.RUNNING,
        remote_dir=run_dir,
        # Until the host reports the real start, the planned one (the wrapper waits for not_before).
        started_at=run.started_at or _planned_start(run),
        explanation="running",
    ):
        # The host's chain of observation steps takes it from here; this starts one if the host has none.
        queueing.observe(disk.host)
        if run.cancel_requested:
            queueing.send("stop", run)  # cancelled while it launched
    return run.state


def _planned_start(run: Run) -> datetime:
    now = timezone.now()
    return max(now, run.not_before or now)


def _state_of(run: Run) -> str:
    """The run's state as stored: another attempt may have moved it on since this one last looked."""
    run.refresh_from_db(fields=["state", "explanation", "launch_attempt"])
    return run.state


def _sending_launch(run: Run, run_dir: str, attempt: int) -> bool:
    """Record the run directory (and the planned start) before the launch command goes out, so that a lost
    answer can be re-attached; False when the run moved on meanwhile (a duplicate attempt ended it, or a
    later one began: that one sends the launch), and then nothing is started."""
    changed = Run.objects.filter(pk=run.pk, state=Run.State.LAUNCHING, launch_attempt=attempt).update(
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


def _launch_answer_lost(run: Run, exc: Exception, attempt: int) -> str:
    """The launch command went out and no answer came back: keep the run and its disk, and ask again later."""
    run.refresh_from_db()
    if run.state != Run.State.LAUNCHING or run.launch_attempt != attempt:
        return run.state  # a duplicate attempt (the sweep's) re-attached it meanwhile, or is at it
    now = timezone.now()
    give_up = _lost_launch_deadline(run)
    if now > give_up:
        finish(run, Run.State.LOST, attempt=attempt, explanation=(
            f"lost: the launch answer never came back and the host has not answered since; if the benchmark "
            f"ran, the host's watchdog stopped it by {give_up:%Y-%m-%d %H:%M:%S} UTC, and its files stay in "
            f"{run.remote_dir} on the host (remove them when it is back). Last error: {exc}"
        ))  # fmt: skip
        return run.state
    Run.objects.filter(pk=run.pk, state=Run.State.LAUNCHING, launch_attempt=attempt).update(
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


def _prepare(run: Run, tool: runner.Tool, pre: remote.Preflight, attempt: int) -> remote.Plan | None:
    """Judge the preflight (tool, safety, space), then the plan; None when the run was refused (and ended, if
    this attempt is still its latest)."""
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
        finish(run, Run.State.ERROR, "refused, nothing was written: " + " ".join(verdict.reasons), attempt=attempt)
        return None
    params = precondition.sized_parameters(params, disk.kind, verdict.facts)
    pinning = _pinning(run, pre, attempt)
    if pinning is None:
        return None
    pinned = {"queue_cpus": pinning.queue_cpus} if pinning.queue_cpus else {}
    argv, files, command_text = tool.build(params | pinned, disk.target_path, disk.kind, pre.run_dir, str(run.uuid))
    guarded = runner.writes(params)
    if guarded:
        files |= guard.files(disk.target_path, disk.kind, pre.safety_report)
    plan = remote.Plan(
        run_uuid=str(run.uuid),
        run_dir=pre.run_dir,
        lock_path=remote.lock_path_for(pre.base, disk.target_path),
        argv=argv,
        limit_s=runner.watchdog_seconds(params, disk.kind),
        files=files,
        start_at=run.not_before.timestamp() if run.not_before else None,
        tunables=pinning.tunables,
        guard_before=guard.before_tool(disk.target_path, disk.kind) if guarded else "",
        guard_after=guard.after_tool() if guarded else "",
    )
    files["run.sh"] = remote.wrapper_script(plan).encode()
    Run.objects.filter(pk=run.pk).update(
        command=command_text,
        summary={"tool_version": version},
        parameters=params,
        warnings=verdict.warnings + precondition.fresh_block_warnings(disk, params) + pinning.warnings,
        environment=pinning.environment,
    )
    return plan


def _pinning(run: Run, pre: remote.Preflight, attempt: int) -> environment.Pinning | None:
    """The environment the probe found, and for a profile pinned to the queue CPUs what that adds to the launch;
    None when the pinning cannot be done here (the run is ended, with the reason and the environment)."""
    found = environment.parse_report(pre.environment_report)
    host = run.disk.host
    pinning = environment.pinning_plan(run.parameters, found, tunable=host.tunable, host_name=host.name)
    if pinning.refusal:
        Run.objects.filter(pk=run.pk).update(environment=found)
        finish(run, Run.State.ERROR, "refused, nothing was started: " + pinning.refusal, attempt=attempt)
        return None
    return pinning


def poll(run_id: int) -> str:
    """Look after one run that is past its launch: the sweep (a run whose heartbeat stopped) and messages sent
    before the host's observation steps existed come here. A running run is the host's chain's to watch
    (jobs/runs/observing.py; one is started if the host has none), a collecting one is collected, a cancelled
    one stopped."""
    run = Run.objects.select_related("disk__host").get(pk=run_id)
    if run.state not in (Run.State.RUNNING, Run.State.COLLECTING):
        return run.state
    if run.cancel_requested:
        return stop(run_id)
    if run.state == Run.State.COLLECTING:
        return collect(run_id)
    queueing.observe(run.disk.host)
    return run.state


def collect(run_id: int) -> str:
    """Read a finished run's results over the host's session, store them, and clean up on the host."""
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    if run.state != Run.State.COLLECTING:
        return run.state
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    tool = runner.for_parameters(run.parameters)
    try:
        with connecting.session(run.disk.host) as conn:
            status = remote.final_state(conn, run.remote_dir)
            if status.state != "finished":
                finish(run, Run.State.LOST, lost_reason(status.state))
                return run.state
            _collect(conn, run, tool, status)
    except (ssh.SSHError, remote.RemoteError) as exc:
        _try_again(run, "collect", exc)
    return run.state


def stop(run_id: int) -> str:
    """Stop a cancelled run on its host (TERM to its whole session, KILL after 10 s) and clean up."""
    run = Run.objects.select_related("disk__host__credential").get(pk=run_id)
    if run.state not in (Run.State.RUNNING, Run.State.COLLECTING) or not run.cancel_requested:
        return run.state
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    try:
        with connecting.session(run.disk.host) as conn:
            remote.cancel(conn, run.remote_dir)
            _cleanup(conn, run)
            finish(run, Run.State.CANCELLED, _stopped_on_host(run))
    except (ssh.SSHError, remote.RemoteError) as exc:
        _try_again(run, "stop", exc)
    return run.state


def _try_again(run: Run, step: str, exc: Exception) -> None:
    """The run goes on on the host whatever happened to our connection: say so, and try again later. The
    heartbeat moves too: this chain is alive, so the sweep must not start a second one."""
    connecting.note_ssh_refusal(run.disk.host, exc, run=run)
    Run.objects.filter(pk=run.pk).update(explanation=f"{run.state}; the last attempt to {step} failed: {exc}",
                                         heartbeat_at=timezone.now())  # fmt: skip
    queueing.send(step, run, countdown=RETRY_S)


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


def near_end(run: Run) -> bool:
    """Due to end within NEAR_END_S, or past its expected end by less than OVERRUN_WAIT_S (a slow file layout
    takes a while; one far past its end is looked at at the usual pace again)."""
    return -OVERRUN_WAIT_S < _seconds_left(run) < NEAR_END_S


def _note_started(run: Run, status: remote.PollResult) -> None:
    """The host says when the tool really started (after waiting for not_before): trust it."""
    if status.started_epoch:
        started = datetime.fromtimestamp(status.started_epoch, tz=UTC)
        Run.objects.filter(pk=run.pk).exclude(started_at=started).update(started_at=started)
        run.started_at = started


def lost_reason(state: str) -> str:
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
    if exit_status == guard.REFUSED_STATUS and (refused := _refused_on_host(conn, run)):
        finish(run, Run.State.ERROR, refused, exit_status=exit_status, progress=run.progress | clock)
        _cleanup(conn, run)
        return
    outputs = {name: remote.read_file(conn, f"{run.remote_dir}/{name}") for name in tool.collect_files}
    # The host's own clock tells the watchdog's KILL (at its limit + WATCHDOG_KILL_S) from another one.
    elapsed = clock["elapsed_s"] if clock["elapsed_from"] == "host" else None
    limit = runner.watchdog_seconds(run.parameters, run.disk.kind)
    outcome = tool.interpret(outputs, exit_status, run.parameters, elapsed_s=elapsed, limit_s=limit)
    tuning = _tuning_outcome(conn, run)
    with transaction.atomic():
        RunSample.store(run, (outcome.summary or {}).get("samples", []))
        finished = finish(
            run,
            outcome.state,
            outcome.explanation,
            summary=stored_summary(outcome.summary),
            raw_output=outcome.raw_output,
            raw_stderr=outcome.raw_stderr,
            exit_status=exit_status,
            progress=run.progress | clock,
            steady_state=outcome.steady_state,
            **tuning,
        )
        if not finished:
            # Another collector finished it first (a sweep raced a slow one): keep its result, not ours.
            transaction.set_rollback(True)
            return
        RunResult.record(run)
        precondition.note_fill(run)
    _cleanup(conn, run)


def _refused_on_host(conn: ssh.Connection, run: Run) -> str:
    """Why the wrapper's last check before the first byte refused the run, or "" when it left no refusal (the
    status was the tool's own)."""
    read = {name: remote.read_file(conn, f"{run.remote_dir}/guard.{name}").decode(errors="replace")
            for name in ("refused", "expected", "seen")}  # fmt: skip
    if not read["refused"].strip():
        return ""
    disk = run.disk
    why, verdict = guard.explanation(
        read["refused"], read["expected"], read["seen"],
        kind=disk.kind, allow_destructive=disk.allow_destructive, recorded_identity=disk.identity,
    )  # fmt: skip
    if verdict is not None and not verdict.ok:
        _note_identity(run, verdict)  # another disk at the path: audited as when the verdict finds it
    return f"refused on the host just before the first write, nothing was written: {why}"


def _tuning_outcome(conn: ssh.Connection, run: Run) -> dict[str, Any]:
    """Whether the wrapper could set rq_affinity, for a run whose wrapper was to (a pinned profile on a tunable
    host): it notes a failed write in tuning.log, read only for such runs. The fields to change, if it failed."""
    device = (run.environment or {}).get("device") or {}
    if "rq_affinity_set" not in device:
        return {}
    log = remote.read_file(conn, f"{run.remote_dir}/tuning.log").decode(errors="replace")
    if not log.strip():
        return {}
    found, warnings = environment.tuning_failed(run.environment or {}, run.warnings, log, host_name=run.disk.host.name)
    return {"environment": found, "warnings": warnings}


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
    """Pending and queued runs stop at once; running ones are stopped on the host by their own task (a launching
    one by its host's next observation step, once it runs).

    A queued run is one no worker holds yet: a launch moves it to *launching* with a conditional UPDATE before
    it does anything, so of that UPDATE and this one only one wins. When the cancel wins, the launch message
    still waiting in the queue finds the run cancelled and starts nothing; when the launch won, the run is
    cancelled as a launching one."""
    unheld = (Run.State.PENDING, Run.State.QUEUED)
    if run.state in unheld and finish(run, Run.State.CANCELLED, "cancelled before it started", from_states=unheld):
        return run
    run.refresh_from_db()  # a launch may have taken it meanwhile
    if run.is_active:
        Run.objects.filter(pk=run.pk).update(cancel_requested=True, explanation="cancelling",
                                             heartbeat_at=timezone.now())  # fmt: skip
        if run.state == Run.State.RUNNING:
            queueing.send("stop", run)
    run.refresh_from_db()
    return run


def sweep(now: Any = None) -> int:
    """Pick up runs no worker has looked at lately (a worker died, a message was lost, a host's chain of
    observation steps or a run's chain of re-attaching launches ended without finishing its run).

    A live chain writes the run's heartbeat at every attempt and sends the next one within RELAUNCH_MAX_S
    (< STALE_AFTER), so a heartbeat older than STALE_AFTER means no chain is left (or one attempt hangs on a
    frozen session: a second chain is then harmless, as every step is a conditional update and a start is
    guarded by the host's atomic mkdir). The beat tick calls this every BENCHWEB_TICK_SECONDS, so a dead chain
    is picked up within STALE_AFTER + one tick period of its last heartbeat (35 s by default), plus the time
    its message waits for a worker. Queued and launching runs get a launch (which re-attaches by UUID), running
    ones a new chain of observation steps for their host (whose steps move every running run's heartbeat there,
    jobs/runs/observing.py), collecting and cancelled ones a poll (a collect, a stop); a run with no heartbeat
    at all is stale at once. Only the sweep that moved a
    run's heartbeat on sends it, so two beat processes do not start two chains.
    """
    now = now or timezone.now()
    stale = Run.objects.filter(
        Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True), state__in=Run.ACTIVE_STATES
    )
    count = 0
    watched: dict[int, tuple[Host, list[int]]] = {}
    runs = stale.select_related("disk__host").only(
        "pk", "state", "heartbeat_at", "queued_at", "cancel_requested", "disk__host__site"
    )
    for run in runs:
        if run.state == Run.State.RUNNING and not run.cancel_requested:
            watched.setdefault(run.disk.host_id, (run.disk.host, []))[1].append(run.pk)
            continue
        fields: dict[str, Any] = {"heartbeat_at": now}
        if run.state == Run.State.QUEUED and run.queued_at and now - run.queued_at > queueing.UNCLAIMED_AFTER:
            # No worker took the launch: most often nobody listens on this site's queue.
            site = run.disk.host.site
            queue = queueing.queue_for(site)
            waited = f"queued on {queue} for {(now - run.queued_at).total_seconds():.0f} s"
            fields["explanation"] = (
                f"{sites.waiting_text(site)} ({waited})"
                if sites.unserved(site)
                else f"{waited} and no worker has taken it: is a worker running with -Q {queue}? "
                f"(celery -A benchweb worker -Q {queue})"
            )
        if not Run.objects.filter(pk=run.pk, heartbeat_at=run.heartbeat_at).update(**fields):
            continue  # another sweep, or the run's own chain, moved it on meanwhile
        if run.state in (Run.State.QUEUED, Run.State.LAUNCHING):
            queueing.send("launch", run)
        else:
            queueing.send("poll", run)  # collect or stop it
        count += 1
    for host, run_ids in watched.values():
        # A running run's heartbeat is moved by its host's chain of observation steps: that chain is gone, or
        # too slow. One UPDATE for the host's stale runs, and one new chain unless a live one is there (the
        # chain's own conditional UPDATE on the host, queueing.observe: a chain only slow ends at its next step).
        moved = (
            Run.objects.filter(pk__in=run_ids, state=Run.State.RUNNING)
            .filter(Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True))
            .update(heartbeat_at=now)
        )
        if moved:
            queueing.observe(host, now=now)
        count += moved
    return count
