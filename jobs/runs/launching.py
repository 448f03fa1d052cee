"""Launching a queued run on its host: connect, preflight, judge (tool, safety, space, pinning), upload, and
send the launch command, re-attaching by UUID when an earlier attempt's answer was lost. A running run is then
its host's observer (jobs/runs/observer.py), handed the host through jobs/runs/steps.py."""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta

from django.db.models import Case, F, TextField, Value, When
from django.utils import timezone

from jobs import environment, remote, safety, ssh
from jobs import runners as runner
from jobs.disks import identity, precondition
from jobs.hosts import connecting
from jobs.models import Run, RunSet
from jobs.remote import fio_server
from jobs.runs import cleaning, states, steps
from jobs.runs.states import finish, move
from jobs.safety import guard
from jobs.sets import group_clocks

# A launch whose answer was lost is asked again after a quarter of the time since its planned start, at least
# RELAUNCH_MIN_S and at most RELAUNCH_MAX_S: the cap stays under sweeping.STALE_AFTER, so while this chain of
# attempts lives the sweep does not start a second one.
RELAUNCH_MIN_S = 5.0


RELAUNCH_MAX_S = 20.0


# timeout(1) in the wrapper sends KILL this long after TERM (`timeout -k 30`).
WATCHDOG_KILL_S = runner.WATCHDOG_KILL_S


# A run whose launch answer was lost and whose host stays unreachable is *lost* this long after the host's own
# watchdog has certainly stopped it (planned start + runners.watchdog_seconds + WATCHDOG_KILL_S).
LOST_LAUNCH_MARGIN = timedelta(minutes=5)


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

    Two attempts may overlap (the sweep re-sends a launch that waited in the queue longer than
    sweeping.STALE_AFTER): each counts itself in `launch_attempt`, and only the latest sends the launch command
    or ends the run, so an older one that fails, or is refused, says nothing about a run the latest may have
    started.
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
        paused = states.paused_schedule(run)
        if run.cancel_requested or paused:
            why = states.paused_explanation(paused) if paused else states.CANCELLED_BEFORE_START
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
                    cleaning.clean_up(conn, run)
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
            if run.run_set_id is not None:
                measure_clock(conn, run)
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
        # A run cancelled while it launched keeps saying so (and why: states.call_off), for its stop to end it.
        explanation=Case(
            When(cancel_requested=True, then=F("explanation")), default=Value("running"), output_field=TextField()
        ),
    ):
        # The host's observer takes it from here; this hands the host to one if none holds it.
        steps.watch(disk.host)
        if run.cancel_requested:
            steps.send("stop", run)  # cancelled while it launched
        elif run.run_set_id is not None and _run_by_fio(run):
            steps.send_drive(run.run_set_id, disk.host.site)  # the last member's server up starts fio's client
    return run.state


def measure_clock(conn: ssh.Connection, run: Run) -> None:
    """A group member's host clock against the worker's, NTP style over the session already open (a few `date`
    commands, the shortest round trip believed), stored on the run for the group's start spread. It runs while
    the wrapper waits for the shared start; a failed probe is stored as the reason and never fails the run."""
    if run.clock_offset or run.run_set_id is None:
        return
    if not RunSet.objects.filter(pk=run.run_set_id, kind__in=RunSet.TOGETHER_KINDS).exists():
        return
    try:
        found = group_clocks.clock_offset(remote.clock_probes(conn))
    except (ssh.SSHError, remote.RemoteError, ValueError) as exc:
        measured: dict[str, object] = {"why": f"offset not measured: {exc}"}
    else:
        measured = {"offset_s": found.offset_s, "uncertainty_s": found.uncertainty_s, "delay_s": found.delay_s,
                    "probes": remote.PROBES}  # fmt: skip
    Run.objects.filter(pk=run.pk).update(clock_offset=measured)


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
    steps.send("launch", run, countdown=min(RELAUNCH_MAX_S, max(RELAUNCH_MIN_S, age / 4)))
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
    identity.note_verdict(run, verdict)
    if not verdict.ok:
        finish(run, Run.State.ERROR, "refused, nothing was written: " + " ".join(verdict.reasons), attempt=attempt)
        return None
    params = precondition.sized_parameters(params, disk.kind, verdict.facts)
    pinning = _pinning(run, pre, attempt)
    if pinning is None:
        return None
    pinned = {"queue_cpus": pinning.queue_cpus} if pinning.queue_cpus else {}
    argv, files, command_text = tool.build(params | pinned, disk.target_path, disk.kind, pre.run_dir, str(run.uuid))
    served = _run_by_fio(run)
    if served:
        if problem := fio_server.socket_problem(pre.run_dir, disk.host.name):
            finish(run, Run.State.ERROR, f"refused, nothing was started: {problem}", attempt=attempt)
            return None
        # fio's server in place of the job: the group's fio client on the worker sends the job (docs/user-guide/
        # groups.md#running-with-fios-own-clientserver-mode); the same checks and lock come first.
        argv = fio_server.server_argv(argv, pre.run_dir)
        command_text = f"{shlex.join(argv)}\n# fio's client on the worker sends it:\n{command_text}"
    guarded = runner.writes(params)
    if guarded:
        files |= guard.files(disk.target_path, disk.kind, pre.safety_report)
        if served:  # checked again at the first byte, when the client's job arrives (fio's exec_prerun)
            files[fio_server.LAST_CHECK] = guard.at_first_byte(disk.kind).encode()
    plan = remote.Plan(
        run_uuid=str(run.uuid),
        run_dir=pre.run_dir,
        lock_path=remote.lock_path_for(pre.base, disk.target_path),
        argv=argv,
        limit_s=runner.watchdog_seconds(params, disk.kind),
        files=files,
        # A server starts at once: fio's client starts the members' jobs together.
        start_at=run.not_before.timestamp() if run.not_before and not served else None,
        tunables=pinning.tunables,
        guard_before=(fio_server.SERVER_SETUP if served else "")
        + (guard.before_tool(disk.target_path, disk.kind) if guarded else ""),
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


def _run_by_fio(run: Run) -> bool:
    """A member of a group run by fio's client/server mode."""
    return run.run_set_id is not None and run.run_set is not None and run.run_set.run_by_fio


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
