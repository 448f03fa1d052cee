"""A run's life on its host after the launch: poll, collect, stop, clean up, cancel, and the sweep that finds runs
nobody is watching. The launch is jobs/runs/launching.py's, the state machine (`move`, `finish`)
jobs/runs/states.py's, and watching a running run jobs/runs/observing.py's. `launch` and its constants are
importable from here as well, as they were before the launch had a module of its own."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs import environment, remote, ssh
from jobs import runners as runner
from jobs.disks import precondition
from jobs.hosts import connecting
from jobs.models import Host, Run, RunResult, RunSample
from jobs.runs import queueing, sites
from jobs.runs.launching import LOST_LAUNCH_MARGIN as LOST_LAUNCH_MARGIN
from jobs.runs.launching import WATCHDOG_KILL_S as WATCHDOG_KILL_S
from jobs.runs.launching import clean_up, note_identity
from jobs.runs.launching import launch as launch
from jobs.runs.states import finish
from jobs.safety import guard

log = logging.getLogger(__name__)


# A collection or stop that could not reach the host is tried again this much later.
RETRY_S = 6.0


# A run due to end within NEAR_END_S is looked at more often by its host's observation steps
# (jobs/runs/observing.py), so that its end is seen within a fraction of a second.
NEAR_END_S = 3.0


OVERRUN_WAIT_S = 15.0


# A run no worker looked at for this long is picked up again by the sweep (see sweep() for the bound); a chain of
# re-attaching launches sends its next attempt within launching.RELAUNCH_MAX_S, which stays under it.
STALE_AFTER = timedelta(seconds=30)


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
            clean_up(conn, run)
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
        clean_up(conn, run)
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
    clean_up(conn, run)


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
        note_identity(run, verdict)  # another disk at the path: audited as when the verdict finds it
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

    A live chain writes the run's heartbeat at every attempt and sends the next one within launching.RELAUNCH_MAX_S
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
