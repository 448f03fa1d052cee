"""Collecting a run that ended on its host: read its results over the host's session, judge them (tool.interpret),
store them (the run's samples and result, in the same transaction as its final state), and clean up on the host.
An observation step (jobs/runs/watching.py) moves an ended run to *collecting* and sends `jobs.collect_run` here."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from jobs import environment, remote, ssh
from jobs import runners as runner
from jobs.hosts import connecting
from jobs.models import Run
from jobs.runs import cleaning, steps, storing
from jobs.runs.states import finish, lost_reason
from jobs.safety import guard


def collect(run_id: int) -> str:
    """Read a finished run's results over the host's session, store them, and clean up on the host."""
    run = Run.objects.select_related("disk__host__credential", "disk__team").get(pk=run_id)
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
        steps.retry(run, "collect", exc)
    return run.state


def _note_started(run: Run, status: remote.PollResult) -> None:
    """The host says when the tool really started (after waiting for not_before): trust it."""
    if status.started_epoch:
        started = datetime.fromtimestamp(status.started_epoch, tz=UTC)
        Run.objects.filter(pk=run.pk).exclude(started_at=started).update(started_at=started)
        run.started_at = started


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
    if exit_status == guard.REFUSED_STATUS and (refused := storing.refused_on_host(conn, run)):
        finish(run, Run.State.ERROR, refused, exit_status=exit_status, progress=run.progress | clock)
        cleaning.clean_up(conn, run)
        return
    outputs = {name: remote.read_file(conn, f"{run.remote_dir}/{name}") for name in tool.collect_files}
    # The host's own clock tells the watchdog's KILL (at its limit + WATCHDOG_KILL_S) from another one.
    elapsed = clock["elapsed_s"] if clock["elapsed_from"] == "host" else None
    limit = runner.watchdog_seconds(run.parameters, run.disk.kind)
    outcome = tool.interpret(outputs, exit_status, run.parameters, elapsed_s=elapsed, limit_s=limit)
    tuning = _tuning_outcome(conn, run)
    if run.run_set is not None and run.run_set.run_by_fio:
        outcome = _driver_lost(outcome)
    if storing.store_outcome(run, outcome, exit_status=exit_status, progress=run.progress | clock, **tuning):
        cleaning.clean_up(conn, run)


def _driver_lost(outcome: runner.Outcome) -> runner.Outcome:
    """A member of a group run by fio's client/server mode is only collected here when its server ended before
    the group's driver stored the client's result: the driver (a worker) was lost, or the server stopped."""
    return dataclasses.replace(outcome, state="failed", summary=None, explanation=(
        "fio's server on this host ended before the group's fio client on the worker reported its result (the "
        "worker driving the group was stopped or lost, or the server was stopped on the host): nothing of this run "
        "was measured"
    ))  # fmt: skip


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
